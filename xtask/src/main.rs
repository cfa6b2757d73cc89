//! Project automation for the MCP Streamable HTTP workspace, in plain Rust instead of shell
//! scripts (the rust-analyzer `xtask` pattern). Run it through the cargo alias:
//!
//! - `cargo xtask ci [--skip STEP]...`: the checks CI runs, in order, stopping at the first
//!   failure: `fmt`, `clippy`, `test`, `doc`, `interop`. `.ci/run` and the GitHub workflow call
//!   this.
//! - `cargo xtask bench [--] [CRITERION_ARGS...]`: the criterion benchmarks of `benches/`
//!   (`--load`: the load benchmark, which rewrites `BENCHMARKS.md`; `--gateways`: the gateway
//!   comparison alone, which rewrites its section of it; `--baseline REV`: this tree's echo
//!   server against REV's, A/B in one run).
//! - `cargo xtask interop [--list] [FILTER]...`: our server against the official TypeScript and
//!   Python SDK clients (`interop/`), each pair a real server process and a real client process.
//!   It installs Node.js, npm and the SDKs under `.tools/` (pinned, reused while the pins match)
//!   and builds the echo server; it ends with `N passed, N failed`.
//! - `cargo xtask conformance [--list] [FILTER]...`: the official MCP conformance suite
//!   (`conformance/`), pinned, against our server (`examples/conformance_server/`) and our
//!   client (`examples/conformance_client.rs`); it prints the suite's totals and ends with
//!   `N passed, N failed`.
//! - `cargo xtask fuzz [--cases N | --seconds S]`: the differential fuzzers of `mcp-jsonrpc`,
//!   `mcp-sse` and the client's HTTP/1.1 decoders (proptest, stable toolchain), longer than the
//!   short round `cargo test` runs:
//!   a minute per target by default, in an optimised build that keeps overflow checks.
//! - `cargo xtask help`: the usage text.
//!
//! `cargo test -p xtask` also runs the tidy tests (`src/tidy.rs`), which keep the source tree
//! clean: no leftover debugging macros, no trailing whitespace, documented crates, every crate in
//! the README's crate table; `src/layers.rs`, which keeps each layered crate's imports running
//! one way, without import circles of more than two files; `src/spec_refs.rs`, which keeps the
//! tests and files SPEC.md cites in existence; and `src/stale_status.rs`, which keeps the READMEs
//! and crate docs from saying that what exists is still to come.

mod bench;
mod ci;
mod cmd;
mod conformance;
mod fuzz;
mod interop;
#[cfg(test)]
mod layers;
mod peer;
mod prometheus;
mod redis;
mod select;
#[cfg(test)]
mod spec_refs;
#[cfg(test)]
mod stale_status;
#[cfg(test)]
mod tidy;
mod tools;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci [--skip STEP]...         run the CI checks in order, stopping at the first failure
                              (steps: fmt, clippy, services, test, doc, package, interop,
                              conformance)
  bench [--] [ARGS...]        run the criterion benchmarks (`cargo bench -p benches`),
                              passing ARGS to criterion, e.g. `cargo xtask bench -- --quick`
  bench --load [-- ARGS...]   the load benchmark: rewrites BENCHMARKS.md (about 5 minutes)
  bench --gateways [-- ARGS...]
                              the gateway comparison (installs supergateway and mcp-proxy):
                              rewrites its section of BENCHMARKS.md
  bench --baseline REV [-- ARGS...]
                              this tree's echo server against REV's (built in target/baseline),
                              interleaved in one run; prints ours ÷ baseline
  interop [FILTER]...         run our server against the TypeScript and Python SDK clients,
                              installing the pinned SDKs under .tools/ first; FILTERs pick the
                              pairs whose names contain one, e.g. `cargo xtask interop py-client`
  interop --list              list the pairs
  conformance [FILTER]...     run the MCP conformance suite (pinned, installed under
                              conformance/node_modules) against our server and client;
                              FILTERs pick scenarios whose names contain one, e.g.
                              `cargo xtask conformance sse` or `cargo xtask conformance client/`
  conformance --list          list the scenarios (server/NAME, client/NAME)
  fuzz [--cases N | --seconds S]
                              run the differential fuzzers of mcp-jsonrpc, mcp-sse
                              and the client's HTTP/1.1 decoders
                              longer than `cargo test` does: N cases or S seconds per
                              target (default: --seconds 60)
  help                        print this text";

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Help,
    Ci(ci::Options),
    Bench(bench::Options),
    Interop(interop::Options),
    Conformance(conformance::Options),
    Fuzz(fuzz::Options),
}

/// A command line xtask does not accept; it exits with status 2.
#[derive(Debug, PartialEq, Eq)]
struct UsageError {
    message: String,
    /// Whether to print the usage text after the message.
    show_usage: bool,
}

impl UsageError {
    /// An error about the shape of the command line, followed by the usage text.
    fn new(message: impl Into<String>) -> UsageError {
        UsageError {
            message: message.into(),
            show_usage: true,
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&args) {
        Ok(command) => command,
        Err(error) => {
            eprintln!("error: {}", error.message);
            if error.show_usage {
                eprintln!("\n{USAGE}");
            }
            return ExitCode::from(2);
        }
    };
    let result = match command {
        Command::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Command::Ci(options) => ci::run(&options),
        Command::Bench(options) => bench::run(&options),
        Command::Interop(options) => interop::run(&options),
        Command::Conformance(options) => conformance::run(&options),
        Command::Fuzz(options) => fuzz::run(&options),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse(args: &[String]) -> Result<Command, UsageError> {
    let Some((command, rest)) = args.split_first() else {
        return Ok(Command::Help);
    };
    match command.as_str() {
        "help" | "-h" | "--help" => Ok(Command::Help),
        "ci" => ci::Options::parse(rest).map(Command::Ci),
        "bench" => bench::Options::parse(rest).map(Command::Bench),
        "interop" => interop::parse(rest).map(Command::Interop),
        "conformance" => conformance::parse(rest).map(Command::Conformance),
        "fuzz" => fuzz::Options::parse(rest).map(Command::Fuzz),
        other => Err(UsageError::new(format!("unknown command '{other}'"))),
    }
}

/// The workspace root: the parent of this package's directory. Commands run there, so that
/// `cargo xtask` works from any directory of the repository.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one directory below the workspace root")
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn no_arguments_and_help_print_usage() {
        assert_eq!(parse(&args("")), Ok(Command::Help));
        assert_eq!(parse(&args("help")), Ok(Command::Help));
        assert_eq!(parse(&args("--help")), Ok(Command::Help));
    }

    #[test]
    fn unknown_command_is_a_usage_error() {
        let error = parse(&args("deploy")).unwrap_err();
        assert_eq!(error.message, "unknown command 'deploy'");
        assert!(error.show_usage);
    }

    #[test]
    fn fuzz_takes_its_budget() {
        assert_eq!(
            parse(&args("fuzz")),
            Ok(Command::Fuzz(fuzz::Options::default()))
        );
        assert!(matches!(
            parse(&args("fuzz --cases 10")),
            Ok(Command::Fuzz(_))
        ));
        let error = parse(&args("fuzz --slow")).unwrap_err();
        assert_eq!(error.message, "unknown option '--slow' for fuzz");
        assert!(USAGE.contains("fuzz [--cases N | --seconds S]"));
    }

    #[test]
    fn project_root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(project_root().join("Cargo.toml")).unwrap();
        assert!(manifest.contains("[workspace]"));
    }
}
