//! The installed suite: Node.js and `@modelcontextprotocol/conformance` at its pin, how to call
//! it, what it lists, and one bounded run of it.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::Result;

use super::auth;
use crate::peer::{self, Ended};
use crate::tools;

/// How long the suite may take over one scenario.
pub(super) const SCENARIO_TIMEOUT: Duration = Duration::from_secs(60);
/// The suite's entry point, under `conformance/node_modules`.
const SUITE_JS: &str = "node_modules/@modelcontextprotocol/conformance/dist/index.js";

/// The installed suite.
#[derive(Debug)]
pub(super) struct Suite {
    node: PathBuf,
    /// `conformance/`, where the suite runs.
    dir: PathBuf,
}

impl Suite {
    /// Node.js and the pinned suite, installed when their stamps do not match.
    pub(super) fn install() -> Result<Suite> {
        let node = tools::node_runtime()?;
        let dir = crate::project_root().join("conformance");
        tools::npm_ci(
            &dir,
            &format!("the conformance suite ({})", suite_version()),
        )?;
        Ok(Suite { node, dir })
    }

    /// `node index.js ARGS...` in `conformance/`, in plain text.
    pub(super) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.node);
        command
            .arg(self.dir.join(SUITE_JS))
            .args(args)
            .current_dir(&self.dir)
            .env("NO_COLOR", "1")
            .env("FORCE_COLOR", "0");
        command
    }

    /// The scenarios the suite lists in `mode` (`server` or `client`) at `version`.
    pub(super) fn listed(&self, mode: &str, version: &str) -> Result<Vec<String>> {
        let mode = format!("--{mode}");
        let listed =
            crate::cmd::output(&mut self.command(&["list", &mode, "--spec-version", version]))?;
        Ok(listed_scenarios(&listed))
    }

    /// The client authorization runs the suite lists.
    pub(super) fn auth_runs(&self) -> Result<Vec<auth::Run>> {
        let listed = crate::cmd::output(&mut self.command(&["list", "--client"]))?;
        auth::runs(&listed)
    }

    pub(super) fn expected_failures(&self) -> String {
        self.dir
            .join("expected-failures.yml")
            .to_string_lossy()
            .into_owned()
    }
}

/// Runs the suite for at most `timeout`, its stdout in `log` and its stderr beside it, and
/// returns how it ended and both outputs (the suite prints its results to either).
pub(super) fn run_suite(
    command: Command,
    log: &Path,
    timeout: Duration,
) -> Result<(Ended, String)> {
    let err = log.with_extension("err");
    let (ended, mut output) = peer::run_client(command, log, &err, timeout)?;
    output.push_str(&fs::read_to_string(&err).unwrap_or_default());
    Ok((ended, output))
}

/// The names in the suite's `list` output: `  - ping [2025-06-18,2025-11-25]`.
fn listed_scenarios(listed: &str) -> Vec<String> {
    listed
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// The pinned suite, for the log: `@modelcontextprotocol/conformance 0.2.0-alpha.12`.
pub(super) fn suite_version() -> String {
    let package = crate::project_root().join("conformance/package.json");
    let package = fs::read_to_string(package).unwrap_or_default();
    let name = "@modelcontextprotocol/conformance";
    format!(
        "{name} {}",
        tools::pinned_npm(&package, name).unwrap_or("?")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_scenarios_are_parsed() {
        let listed = "Server scenarios (test against a server):\n  - server-initialize [2025-06-18,2025-11-25]\n  - ping [2025-06-18,2025-11-25]\n";
        assert_eq!(listed_scenarios(listed), ["server-initialize", "ping"]);
    }

    #[test]
    fn the_suite_is_pinned_exactly() {
        let version = suite_version();
        assert!(!version.contains('?'), "{version}");
        assert!(
            !version.contains('^') && !version.contains('~'),
            "{version}"
        );
    }
}
