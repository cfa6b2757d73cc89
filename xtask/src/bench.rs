//! `cargo xtask bench`: the criterion benchmarks of the `benches` package, and with `--load`
//! the load benchmark (`benches/load/`), which rewrites `BENCHMARKS.md`.

use anyhow::Result;

use crate::{UsageError, cmd};

/// The options of `cargo xtask bench`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Options {
    /// Passed to criterion after `--`: a benchmark filter, `--quick`, `--save-baseline NAME`...
    /// With `--load`, passed to `mcp-load-suite` instead (`--duration 2`, `--servers ours`...).
    criterion_args: Vec<String>,
    /// Run the load benchmark instead of the criterion benchmarks.
    load: bool,
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
                "--load" => options.load = true,
                _ => options.criterion_args.push(arg.clone()),
            }
        }
        Ok(options)
    }
}

pub(crate) fn run(options: &Options) -> Result<()> {
    if options.load {
        return run_load(options);
    }
    let mut command = cmd::cargo(&["bench", "--package", "benches"]);
    if !options.criterion_args.is_empty() {
        command.arg("--").args(&options.criterion_args);
    }
    cmd::run(&mut command)
}

/// Builds the servers and the load generator in release and runs `mcp-load-suite`, which
/// pins each server to one core and the generator to the other and writes `BENCHMARKS.md`.
fn run_load(options: &Options) -> Result<()> {
    // The rows of several nodes run on a redis-server the suite starts.
    crate::redis::ensure()?;
    cmd::run(&mut cmd::cargo(&[
        "build",
        "--release",
        "--package",
        "benches",
        "--bins",
    ]))?;
    cmd::run(&mut cmd::cargo(&[
        "build",
        "--release",
        "--package",
        "examples",
        "--example",
        "echo_server",
    ]))?;
    // tower-mcp's echo server: a package outside the workspace (see its Cargo.toml), built
    // into the same target directory, where the suite looks for it.
    let target = cmd::target_dir()?;
    let peer = crate::project_root().join("benches/peers/tower-mcp/Cargo.toml");
    cmd::run(
        cmd::cargo(&["build", "--release", "--manifest-path"])
            .arg(peer)
            .arg("--target-dir")
            .arg(&target),
    )?;
    let suite = target.join("release").join("mcp-load-suite");
    let output = crate::project_root().join("BENCHMARKS.md");
    let mut command = std::process::Command::new(suite);
    command
        .arg("--output")
        .arg(output)
        .args(&options.criterion_args)
        .current_dir(crate::project_root());
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
    fn load_selects_the_load_benchmark_and_passes_its_arguments() {
        let options = Options::parse(&args("--load -- --duration 2")).unwrap();
        assert!(options.load);
        assert_eq!(options.criterion_args, ["--duration", "2"]);
        assert!(!Options::parse(&args("--quick")).unwrap().load);
    }
}
