//! `cargo xtask bench`: the criterion benchmarks of the `benches` package.

use anyhow::Result;

use crate::{UsageError, cmd};

/// The options of `cargo xtask bench`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Options {
    /// Passed to criterion after `--`: a benchmark filter, `--quick`, `--save-baseline NAME`...
    criterion_args: Vec<String>,
}

impl Options {
    /// Everything after a `--` goes to criterion unchanged; before it, `--load` belongs to xtask
    /// and any other argument goes to criterion too.
    pub(crate) fn parse(args: &[String]) -> Result<Options, UsageError> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--" => options.criterion_args.extend(args.by_ref().cloned()),
                // The load benchmark (a server under many concurrent sessions) comes later: when
                // it lands, parse `--load` into a field here and run it from `run` below.
                "--load" => {
                    return Err(UsageError {
                        message: "--load is not implemented yet; tracked in the load-benchmark \
                                  issue"
                            .into(),
                        show_usage: false,
                    });
                }
                _ => options.criterion_args.push(arg.clone()),
            }
        }
        Ok(options)
    }
}

pub(crate) fn run(options: &Options) -> Result<()> {
    let mut command = cmd::cargo(&["bench", "--package", "benches"]);
    if !options.criterion_args.is_empty() {
        command.arg("--").args(&options.criterion_args);
    }
    cmd::run(&mut command)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn arguments_go_to_criterion() {
        let options = Options::parse(&args("-- --quick sse")).unwrap();
        assert_eq!(options.criterion_args, ["--quick", "sse"]);
        let options = Options::parse(&args("jsonrpc -- --load")).unwrap();
        assert_eq!(options.criterion_args, ["jsonrpc", "--load"]);
        assert_eq!(Options::parse(&[]).unwrap(), Options::default());
    }

    #[test]
    fn load_is_refused_until_it_exists() {
        let error = Options::parse(&args("--load")).unwrap_err();
        assert_eq!(
            error.message,
            "--load is not implemented yet; tracked in the load-benchmark issue"
        );
        assert!(!error.show_usage);
    }
}
