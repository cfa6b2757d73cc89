//! `cargo xtask fuzz`: the differential fuzzers of `mcp-jsonrpc` (the body parser against a
//! reference written from JSON-RPC 2.0 and RFC 8259), `mcp-sse` (the scanner, in arbitrary
//! chunks, against the WHATWG steps and its bound) and `mcp-streamable-client` (its HTTP/1.1
//! response heads against `httparse` and RFC 9112's framing rules, its chunked bodies against a
//! reading of RFC 9112 section 7.1, both in arbitrary reads), for longer than `cargo test` runs
//! them.
//!
//! They are proptest harnesses, the `fuzz_` tests of `tests/it/fuzz.rs` in the first two crates
//! and of the client's `src/wire/h1/fuzz` (unit tests, as the decoders are private), so they
//! need only the stable toolchain; `cargo test` runs a short round of each, and this command
//! the same tests with a bigger budget, in an optimised build that keeps overflow checks and
//! debug assertions.

use std::process::Command;

use anyhow::Result;

use crate::{UsageError, cmd};

/// What `cargo xtask fuzz` runs without options: a minute per target.
const DEFAULT_SECONDS: u32 = 60;

/// How long to fuzz each target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Budget {
    /// This many cases per target (`MCP_FUZZ_CASES`).
    Cases(u32),
    /// Rounds of cases until this many seconds have passed, per target (`MCP_FUZZ_SECONDS`).
    Seconds(u32),
}

/// The options of `cargo xtask fuzz`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Options {
    budget: Budget,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            budget: Budget::Seconds(DEFAULT_SECONDS),
        }
    }
}

impl Options {
    /// `[--cases N | --seconds S]`, each also as `--cases=N`.
    pub(crate) fn parse(args: &[String]) -> Result<Options, UsageError> {
        let mut budget = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let (option, value) = match arg.split_once('=') {
                Some((option, value)) => (option, Some(value)),
                None => (arg.as_str(), None),
            };
            let make: fn(u32) -> Budget = match option {
                "--cases" => Budget::Cases,
                "--seconds" => Budget::Seconds,
                _ => return Err(UsageError::new(format!("unknown option '{arg}' for fuzz"))),
            };
            let value = match value {
                Some(value) => value,
                None => args
                    .next()
                    .ok_or_else(|| UsageError::new(format!("{option} needs a number")))?,
            };
            let number = value
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    UsageError::new(format!("{option} needs a positive number, not '{value}'"))
                })?;
            if budget.replace(make(number)).is_some() {
                return Err(UsageError::new("give one of --cases and --seconds, once"));
            }
        }
        Ok(Options {
            budget: budget.unwrap_or(Budget::Seconds(DEFAULT_SECONDS)),
        })
    }
}

pub(crate) fn run(options: &Options) -> Result<()> {
    cmd::run(&mut command(options))
}

/// `cargo test --release` of the three crates' fuzz tests, integration and unit, with the
/// budget in the environment.
fn command(options: &Options) -> Command {
    let mut command = cmd::cargo(&[
        "test",
        "--release",
        "--package",
        "mcp-jsonrpc",
        "--package",
        "mcp-sse",
        "--package",
        "mcp-streamable-client",
        "--lib",
        "--test",
        "it",
        "--",
        "fuzz::",
        "--nocapture",
    ]);
    // Fuzzing is for finding what is wrong: keep the checks an optimised build drops.
    command
        .env("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", "true")
        .env("CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS", "true");
    match options.budget {
        Budget::Cases(cases) => command
            .env("MCP_FUZZ_CASES", cases.to_string())
            .env_remove("MCP_FUZZ_SECONDS"),
        Budget::Seconds(seconds) => command
            .env("MCP_FUZZ_SECONDS", seconds.to_string())
            .env_remove("MCP_FUZZ_CASES"),
    };
    command
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn budget_is_cases_or_seconds_a_minute_by_default() {
        assert_eq!(Options::parse(&[]).unwrap(), Options::default());
        assert_eq!(Options::default().budget, Budget::Seconds(60));
        let budget = |line| Options::parse(&args(line)).unwrap().budget;
        assert_eq!(budget("--cases 100000"), Budget::Cases(100_000));
        assert_eq!(budget("--cases=7"), Budget::Cases(7));
        assert_eq!(budget("--seconds 600"), Budget::Seconds(600));
        assert_eq!(budget("--seconds=5"), Budget::Seconds(5));
    }

    #[test]
    fn bad_budgets_are_usage_errors() {
        let error = |line| Options::parse(&args(line)).unwrap_err().message;
        assert_eq!(error("--cases"), "--cases needs a number");
        assert_eq!(
            error("--seconds ten"),
            "--seconds needs a positive number, not 'ten'"
        );
        assert_eq!(
            error("--cases 0"),
            "--cases needs a positive number, not '0'"
        );
        assert_eq!(
            error("--cases 5 --seconds 5"),
            "give one of --cases and --seconds, once"
        );
        assert_eq!(error("--quick"), "unknown option '--quick' for fuzz");
    }

    #[test]
    fn runs_the_fuzz_tests_optimised_with_checks_and_the_budget() {
        let command = command(&Options::parse(&args("--cases 500")).unwrap());
        let line: Vec<_> = command.get_args().map(OsStr::to_string_lossy).collect();
        assert_eq!(
            line.join(" "),
            "test --release --package mcp-jsonrpc --package mcp-sse --package \
             mcp-streamable-client --lib --test it -- fuzz:: --nocapture"
        );
        let envs: Vec<(&OsStr, Option<&OsStr>)> = command.get_envs().collect();
        for (name, value) in [
            ("CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS", Some("true")),
            ("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", Some("true")),
            ("MCP_FUZZ_CASES", Some("500")),
            ("MCP_FUZZ_SECONDS", None),
        ] {
            assert!(
                envs.contains(&(OsStr::new(name), value.map(OsStr::new))),
                "{name} in {envs:?}"
            );
        }
    }
}
