//! The load benchmark of the MCP Streamable HTTP transport (`cargo xtask bench --load`): the
//! load generators, the servers they measure besides the echo example, the failover driver and
//! the suite that runs them all and writes `BENCHMARKS.md` (see `benches/README.md`).
//!
//! Each binary of the package (`bin/`) is a command line and a call: `mcp-load` runs
//! [`generator::run`] with its [`generator::Args`], and so on. The programs talk to each other
//! only as processes: the suite starts the servers, runs a generator per measurement and reads
//! back the JSON report it prints (`report`), so that each measurement has a process, and a
//! core, of its own.
//!
//! # How it is built
//!
//! The modules form layers, top to bottom. A module imports from its own layer and the ones
//! below it, never from one above, and the imports between files form no circle; a tidy test
//! (`cargo test -p xtask`, `layers.rs`) holds the code to this list:
//!
//! 1. `suite`: `mcp-load-suite`, which runs the programs below and writes the tables.
//! 2. `generator`, `client`, `failover`, `serve`: the programs, `mcp-load` (plain hyper
//!    sessions), `mcp-client-load` (a client library under load), `mcp-failover`, and the
//!    servers this package builds (`mcp-ceiling`, `mcp-flood`, `rmcp-echo`, `mcp-proxy`).
//! 3. `measure`, `redis`: the closed loop's clock and accounts, which make the one report of
//!    both load generators; a `redis-server` of the benchmark's own, and what Redis says of
//!    itself.
//! 4. `report`, `procfs`, `errors`, `stats`, `cli`: what the programs print and the suite
//!    reads back, what `/proc` says of a process, errors counted with a few kept, medians and
//!    percentiles, the value parsers of the command lines.

#![deny(missing_docs)]

pub mod client;
pub mod failover;
pub mod generator;
pub mod serve;
pub mod suite;

mod cli;
mod errors;
mod measure;
mod procfs;
mod redis;
mod report;
mod stats;

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, Parser};

    /// Parses `line` as the command line of the program of `P`.
    fn parse<P: Parser>(line: &str) -> P {
        let words = std::iter::once("program").chain(line.split_whitespace());
        P::try_parse_from(words).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn every_command_line_is_well_formed() {
        crate::generator::Args::command().debug_assert();
        crate::client::Args::command().debug_assert();
        crate::failover::Args::command().debug_assert();
        crate::suite::Args::command().debug_assert();
        crate::serve::ceiling::Args::command().debug_assert();
        crate::serve::flood::Args::command().debug_assert();
        crate::serve::rmcp_echo::Args::command().debug_assert();
        crate::serve::proxy::Args::command().debug_assert();
    }

    #[test]
    fn the_generator_reads_what_the_suite_and_the_readme_write() {
        use crate::generator::{Args, Mode};
        let args: Args = parse(
            "--url http://127.0.0.1:1/mcp --concurrency 64 --duration 0.5 --warmup 0 \
             --server-pid 7 --server-pid 8 --side-pid redis=9 --protocol 2026-07-28 \
             --bearer T --dpop-key k.pem --dpop-htu http://h/mcp --json",
        );
        assert_eq!(args.concurrency, 64);
        assert_eq!(args.duration, std::time::Duration::from_millis(500));
        assert_eq!(args.server_pids, [7, 8]);
        assert_eq!(args.side_pids, [("redis".to_owned(), 9)]);
        assert!(args.protocol.is_some() && args.json);
        let args: Args = parse("--url U --mode idle --sessions 2 --close --server-pid 1");
        assert_eq!(
            (args.mode, args.sessions, args.close),
            (Mode::Idle, 2, true)
        );
        let defaults: Args = parse("--url U --mode stream");
        assert_eq!(defaults.notifications, 1_000_000);
        assert_eq!((defaults.batch, defaults.concurrency), (5_000, 16));
        for bad in [
            "--mode calls",
            "--url U --concurrency 0",
            "--url U --sessions 1",
            "--url U --protocol 2025-06-18",
            "--url U --dpop-key k.pem",
            "--url U --side-pid redis",
        ] {
            let words = std::iter::once("mcp-load").chain(bad.split_whitespace());
            assert!(Args::try_parse_from(words).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn the_other_programs_read_what_the_suite_and_the_readme_write() {
        let client: crate::client::Args = parse(
            "--url U --client rmcp-pooled --callers 4 --duration 5 --warmup 1 --server-pid 3 \
             --json",
        );
        assert_eq!((client.callers, client.server_pid), (4, Some(3)));
        let suite: crate::suite::Args = parse(
            "--output o.md --duration 2 --runs 1 --concurrency 16,64 --servers ours,rmcp \
             --idle-sessions 0 --notifications 0 --client-callers 0 --clients ours \
             --redis-sessions 0 --failover-trials 0 --quiet-wait 0 --no-pin",
        );
        assert_eq!(suite.concurrency, [16, 64]);
        assert_eq!(
            suite.servers.as_deref(),
            Some(&["ours".into(), "rmcp".into()][..])
        );
        let proxy: crate::serve::proxy::Args =
            parse("--away --node 127.0.0.1:1 --node 127.0.0.1:2");
        assert_eq!(proxy.nodes.len(), 2);
        let failover: crate::failover::Args = parse("--trials 3 --redis redis://h/ --json");
        assert_eq!(failover.trials, 3);
        let echo: crate::serve::rmcp_echo::Args = parse("--addr 127.0.0.1:0 --json-response");
        assert!(echo.json_response && !echo.stateless);
    }
}
