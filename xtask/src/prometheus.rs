//! Prometheus for the examples' test that has it scrape `echo_server --metrics`
//! (`examples/tests/it/ops/prometheus.rs`, which starts a `prometheus` of its own): Debian's
//! package, unpacked under `.tools/prometheus` (ignored by git) rather than installed, so that
//! it needs no root, starts no system service and leaves the machine as it was. The package is
//! fetched by apt (`apt-get download`), and its binary is a static Go program, which runs from
//! there without the package's dependencies.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cmd;

/// The Debian package.
const PACKAGE: &str = "prometheus";

/// Where it is unpacked, under the project's root; the test looks there first.
const DIR: &str = ".tools/prometheus";

/// The binary, in the unpacked package.
fn binary(dir: &Path) -> PathBuf {
    dir.join("usr/bin/prometheus")
}

/// Makes sure `.tools/prometheus/usr/bin/prometheus` runs, unpacking Debian's package there
/// when it does not.
pub(crate) fn ensure() -> Result<()> {
    let dir = crate::project_root().join(DIR);
    if let Ok(version) = version(&binary(&dir)) {
        eprintln!("xtask: {version} in {DIR}");
        return Ok(());
    }
    eprintln!("xtask: unpacking Debian's {PACKAGE} into {DIR}");
    let download = dir.join("download");
    fs::create_dir_all(&download)?;
    // A fresh machine may have no package lists yet: update once (as root) if the first try
    // fails.
    let mut get = apt_download(&download);
    if cmd::run(&mut get).is_err() {
        cmd::run(Command::new("apt-get").args(["update", "-q"]))
            .context("apt-get update failed (as root it would fetch the package lists)")?;
        cmd::run(&mut apt_download(&download))
            .with_context(|| format!("could not download {PACKAGE}"))?;
    }
    let deb = fs::read_dir(&download)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|path| path.extension().is_some_and(|e| e == "deb"))
        .with_context(|| format!("apt-get download left no .deb in {}", download.display()))?;
    cmd::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&dir))
        .with_context(|| format!("could not unpack {}", deb.display()))?;
    fs::remove_dir_all(&download)?;
    match version(&binary(&dir)) {
        Ok(version) => {
            eprintln!("xtask: unpacked {version} in {DIR}");
            Ok(())
        }
        Err(e) => bail!("{PACKAGE} was unpacked but does not run: {e:#}"),
    }
}

/// `apt-get download` of the package into `dir` (the package alone, none of its dependencies).
fn apt_download(dir: &Path) -> Command {
    let mut command = Command::new("apt-get");
    command
        .args(["download", "-q", PACKAGE])
        .current_dir(dir)
        .env("DEBIAN_FRONTEND", "noninteractive");
    command
}

/// The first line of `prometheus --version`.
fn version(binary: &Path) -> Result<String> {
    let output = cmd::output(Command::new(binary).arg("--version"))?;
    Ok(output.lines().next().unwrap_or("").trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The path a machine that ran the services step takes: unpacked, runs, nothing fetched.
    /// The services step of `cargo xtask ci` runs `ensure` before the tests, so it holds there.
    #[test]
    fn the_unpacked_prometheus_runs() {
        ensure().unwrap();
        let dir = crate::project_root().join(DIR);
        let version = version(&binary(&dir)).unwrap();
        assert!(version.starts_with("prometheus, version"), "{version}");
    }
}
