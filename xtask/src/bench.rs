//! `cargo xtask bench`: the criterion benchmarks of the `benches` package, and with `--load`
//! the load benchmark (`benches/load/`), which rewrites `BENCHMARKS.md`; with `--gateways`, the
//! load suite's gateway comparison alone, which rewrites its own section of it; with
//! `--baseline REV`, an A/B of this tree's echo server against REV's in one run, interleaved
//! (its report printed, or written where `-- --output FILE` says).

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result};

use crate::{UsageError, cmd};

/// The options of `cargo xtask bench`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Options {
    /// Passed to criterion after `--`: a benchmark filter, `--quick`, `--save-baseline NAME`...
    /// With `--load`, passed to `mcp-load-suite` instead (`--duration 2`, `--servers ours`...).
    criterion_args: Vec<String>,
    /// Run the load benchmark instead of the criterion benchmarks.
    load: bool,
    /// Run the load suite's gateway comparison alone (implies `load`).
    gateways: bool,
    /// `--baseline REV`: the echo server built from REV too, for an A/B in one run (implies
    /// `load`).
    baseline: Option<String>,
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
                "--gateways" => {
                    options.load = true;
                    options.gateways = true;
                }
                "--baseline" => {
                    let rev = args.next().ok_or_else(|| {
                        UsageError::new("--baseline needs a revision (a commit, a tag, HEAD~1)")
                    })?;
                    options.load = true;
                    options.baseline = Some(rev.clone());
                }
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
    if options.gateways {
        return run_gateways(options);
    }
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
    let mut command = std::process::Command::new(suite);
    if let Some(rev) = &options.baseline {
        // An A/B is a measurement, not the benchmark's record: its report goes elsewhere
        // unless `-- --output FILE` says where.
        let (echo_server, name) = build_baseline(rev, &target)?;
        command
            .arg("--baseline-echo-server")
            .arg(echo_server)
            .arg("--baseline-name")
            .arg(name);
    } else {
        command
            .arg("--output")
            .arg(crate::project_root().join("BENCHMARKS.md"));
    }
    command
        .args(&options.criterion_args)
        .current_dir(crate::project_root());
    cmd::run(&mut command)
}

/// The step "baseline": the tree of `rev` exported (`git archive`) into `target/baseline/SHA`
/// and its echo server built in release into a target directory of its own, unless built
/// already; returns the binary and the commit's short name.
fn build_baseline(rev: &str, target: &Path) -> Result<(std::path::PathBuf, String)> {
    eprintln!("xtask: baseline {rev}");
    let root = crate::project_root();
    let output = Command::new("git")
        .args(["rev-parse", "--short=12", "--verify"])
        .arg(format!("{rev}^{{commit}}"))
        .current_dir(&root)
        .output()
        .context("running git rev-parse")?;
    if !output.status.success() {
        anyhow::bail!("--baseline {rev}: not a commit of this repository");
    }
    let sha = String::from_utf8(output.stdout)?.trim().to_owned();
    let tree = target.join("baseline").join(&sha);
    if !tree.join("Cargo.toml").is_file() {
        std::fs::create_dir_all(&tree)?;
        let archive = format!(
            "git archive --format=tar {sha} | tar -x -C '{}'",
            tree.display()
        );
        cmd::run(Command::new("sh").args(["-c", &archive]).current_dir(&root))?;
    }
    let baseline_target = target.join("baseline-target");
    cmd::run(
        cmd::cargo(&[
            "build",
            "--release",
            "--package",
            "examples",
            "--example",
            "echo_server",
        ])
        .arg("--manifest-path")
        .arg(tree.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&baseline_target),
    )?;
    let binary = baseline_target.join("release/examples/echo_server");
    Ok((binary, sha))
}

/// The gateway comparison: our gateway and the load generator built in release, the peers
/// installed, then `mcp-load-suite --gateways`, which rewrites the gateway section of
/// `BENCHMARKS.md` only.
fn run_gateways(options: &Options) -> Result<()> {
    cmd::run(&mut cmd::cargo(&[
        "build",
        "--release",
        "--package",
        "mcp-gateway",
        "--package",
        "benches",
        "--bin",
        "mcp-gateway",
        "--bin",
        "mcp-load",
        "--bin",
        "mcp-load-suite",
    ]))?;
    install_gateway_peers()?;
    let target = cmd::target_dir()?;
    let mut command = Command::new(target.join("release").join("mcp-load-suite"));
    command
        .arg("--gateways")
        .arg("--output")
        .arg(crate::project_root().join("BENCHMARKS.md"))
        .args(&options.criterion_args)
        .current_dir(crate::project_root());
    cmd::run(&mut command)
}

/// Where the PyPI gateway's venv goes (ignored, with the other tools).
const GATEWAYS_VENV: &str = ".tools/gateways-py";

/// The step "gateway peers": supergateway and npm's mcp-proxy with `npm ci` from the lock file
/// of `benches/peers/gateways` (Node.js from `.tools/node`, as the interop suite's), and PyPI's
/// mcp-proxy into a venv from its `requirements.txt`; each skipped when already installed from
/// the same pins. Not part of `cargo xtask ci`.
fn install_gateway_peers() -> Result<()> {
    eprintln!("xtask: gateway peers (benches/peers/gateways)");
    let root = crate::project_root();
    let peers = root.join("benches/peers/gateways");
    crate::tools::npm_ci(&peers, "the gateways supergateway and mcp-proxy (npm)")?;
    let requirements = std::fs::read_to_string(peers.join("requirements.txt"))
        .context("reading benches/peers/gateways/requirements.txt")?;
    let venv = root.join(GATEWAYS_VENV);
    let stamp = venv.join(".gateways-stamp");
    let installed = venv.join("bin/mcp-proxy").is_file()
        && std::fs::read_to_string(&stamp).is_ok_and(|s| s == requirements);
    if installed {
        return Ok(());
    }
    make_venv(&venv, &peers.join("requirements.txt"))?;
    std::fs::write(&stamp, requirements)?;
    Ok(())
}

/// A fresh venv at `venv` with `requirements` installed by pip.
fn make_venv(venv: &Path, requirements: &Path) -> Result<()> {
    if venv.exists() {
        std::fs::remove_dir_all(venv).with_context(|| format!("removing {}", venv.display()))?;
    }
    cmd::run(Command::new("python3").args(["-m", "venv"]).arg(venv))
        .context("could not create the gateways' venv (python3 with its venv module)")?;
    let mut pip = Command::new(venv.join("bin/python"));
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ])
    .args(["--timeout", "60", "--retries", "2", "-r"])
    .arg(requirements)
    .stdout(std::io::stderr());
    cmd::run(&mut pip).context("could not install mcp-proxy from PyPI")
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

    #[test]
    fn baseline_takes_a_revision_and_selects_the_load_benchmark() {
        let options = Options::parse(&args("--baseline HEAD~2 -- --runs 5")).unwrap();
        assert!(options.load && !options.gateways);
        assert_eq!(options.baseline.as_deref(), Some("HEAD~2"));
        assert_eq!(options.criterion_args, ["--runs", "5"]);
        assert!(Options::parse(&args("--baseline")).is_err());
    }

    #[test]
    fn gateways_select_the_gateway_comparison_of_the_load_benchmark() {
        let options = Options::parse(&args("--gateways -- --runs 1")).unwrap();
        assert!(options.load && options.gateways);
        assert_eq!(options.criterion_args, ["--runs", "1"]);
        assert!(!Options::parse(&args("--load")).unwrap().gateways);
    }
}
