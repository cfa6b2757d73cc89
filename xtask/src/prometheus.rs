//! Prometheus for the examples' test that has it scrape `echo_server --metrics`
//! (`examples/tests/it/prometheus.rs`, which starts a `prometheus` of its own): found on
//! `PATH`, or installed from Debian's packages when missing, as Redis is (`redis.rs`).

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cmd;
use crate::redis::{apt_install, is_root, on_path};

/// The Debian package and its binary.
const PACKAGE: &str = "prometheus";

/// Makes sure `prometheus` is on `PATH`, installing Debian's package with apt when it is
/// missing (as root only). The system service is not started: the test starts its own.
pub(crate) fn ensure() -> Result<()> {
    if let Some(found) = find()? {
        eprintln!("xtask: {found}");
        return Ok(());
    }
    if !is_root()? {
        bail!(
            "prometheus is not installed and xtask is not root: install it (on Debian and \
             Ubuntu, `sudo apt-get install -y --no-install-recommends {PACKAGE}`)"
        );
    }
    eprintln!("xtask: prometheus is missing; installing Debian's {PACKAGE}");
    apt_install(PACKAGE)?;
    match find()? {
        Some(found) => {
            eprintln!("xtask: installed {found}");
            Ok(())
        }
        None => bail!("{PACKAGE} was installed but prometheus is not on PATH"),
    }
}

/// The `prometheus` on `PATH` and its version line, if any.
fn find() -> Result<Option<String>> {
    let Some(path) = on_path("prometheus", std::env::var_os("PATH").as_deref()) else {
        return Ok(None);
    };
    let output = cmd::output(Command::new(&path).arg("--version"))
        .with_context(|| format!("running {} --version", path.display()))?;
    let version = output.lines().next().unwrap_or("").trim().to_owned();
    Ok(Some(format!("{version} at {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The path a machine with Prometheus takes: found, nothing installed. The services step of
    /// `cargo xtask ci` runs `ensure` before the tests, so it holds there.
    #[test]
    fn the_installed_prometheus_is_found() {
        let found = find().unwrap().expect("prometheus on PATH");
        assert!(found.starts_with("prometheus, version"), "{found}");
        ensure().unwrap();
    }
}
