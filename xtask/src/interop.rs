//! `cargo xtask interop`: our server and our client against the official TypeScript SDK (v1
//! and v2) and Python SDK (2.x and 1.x). Each pair is a real server process and a real client
//! process: the server prints its address, the client script runs one scenario against it and
//! prints `ok: ...` or `FAIL (step): reason`. `interop/README.md` says what each scenario checks.
//!
//! This file selects the pairs, runs them in order and reports each one and the totals. Beside
//! it: `pairs.rs`, the table of pairs and their names; `peers.rs`, what the pairs need installed
//! and the commands that start each side; `run.rs`, one pair's run and its verdict; `nodes.rs`,
//! the Redis and the two nodes of a pair of several nodes.

use std::time::Instant;

use anyhow::{Result, bail};

use crate::UsageError;
use crate::select::Selection;
use crate::tools;

mod nodes;
mod pairs;
mod peers;
mod run;

use pairs::{PAIRS, Pair};
use peers::Peers;
use run::run_pair;

/// The options of `cargo xtask interop`: `[--list] [FILTER]...` over the pair names
/// (`py-client`, `json`).
pub(crate) type Options = Selection;

/// Parses the arguments of `cargo xtask interop`; a filter must match some pair.
pub(crate) fn parse(args: &[String]) -> Result<Options, UsageError> {
    let options = Selection::parse(args, "interop")?;
    if !options.filters.is_empty() && selected(&options).is_empty() {
        let filters = options.filters.join("', '");
        return Err(UsageError {
            message: format!(
                "no interop pair matches '{filters}' (see `cargo xtask interop --list`)"
            ),
            show_usage: false,
        });
    }
    Ok(options)
}

/// The pairs `options` selects, in the order they run.
fn selected(options: &Options) -> Vec<&'static Pair> {
    PAIRS
        .iter()
        .filter(|pair| options.selects(&pair.to_string()))
        .collect()
}

pub(crate) fn run(options: &Options) -> Result<()> {
    let pairs = selected(options);
    if options.list {
        for pair in pairs {
            println!("{pair}");
        }
        return Ok(());
    }
    eprintln!("xtask: interop with {}", tools::sdk_versions());
    let peers = Peers::prepare(&pairs)?;
    let (mut passed, mut failed) = (0, 0);
    for pair in pairs {
        let start = Instant::now();
        match run_pair(&peers, pair) {
            Ok(()) => {
                passed += 1;
                let elapsed = start.elapsed().as_secs_f64();
                println!("interop: PASS {pair} in {elapsed:.1}s");
            }
            Err(failure) => {
                failed += 1;
                println!("interop: FAIL {pair}: {failure}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        bail!(
            "{failed} interop pair(s) failed; logs in {}",
            peers.logs.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn filters_select_pairs_and_must_match_one() {
        let options = parse(&args("py-client stateless")).unwrap();
        let names: Vec<String> = selected(&options).iter().map(|p| p.to_string()).collect();
        assert_eq!(names.len(), 12, "{names:?}");
        assert!(
            names
                .iter()
                .all(|n| n.contains("py-client") || n.contains("stateless"))
        );
        assert_eq!(selected(&parse(&[]).unwrap()).len(), PAIRS.len());
        assert!(parse(&args("--list")).unwrap().list);
        let error = parse(&args("rust-client")).unwrap_err();
        assert_eq!(
            error.message,
            "no interop pair matches 'rust-client' (see `cargo xtask interop --list`)"
        );
        assert!(parse(&args("--fast")).unwrap_err().show_usage);
    }
}
