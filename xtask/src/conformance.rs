//! `cargo xtask conformance`: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, pinned in `conformance/package.json`) against our
//! server and our client, at protocol revisions 2025-11-25 and 2026-07-28.
//!
//! - server mode: every server scenario the suite lists for 2025-11-25 and for 2026-07-28
//!   against `examples/conformance_server/`, each revision in one run (`--suite all`, so the
//!   pending ones, server-sse-polling included, run too; one by one when a filter or an
//!   exclusion picks some);
//! - client mode: every client scenario the suite lists for each revision, each driving
//!   `examples/conformance_client.rs`;
//! - client authorization: every scored `auth/*` scenario at each revision the suite lists it
//!   for, and the client-credentials, DPoP, enterprise-managed and workload-identity extensions
//!   (`auth.rs`), named `client/auth/NAME@REVISION` for filters.
//!
//! A scenario the suite lists is left out only by a row of the `## Not run` table of
//! `conformance/README.md`, with why (`exclusions.rs`); a row naming a scenario the suite no
//! longer lists fails the run.
//!
//! It prints the suite's own totals per mode and ends with `N passed, N failed`, the checks of
//! both modes; it fails if the suite reports a failure (or a stale entry of
//! `conformance/expected-failures.yml`, which the suite itself judges). `conformance/README.md`
//! says more.
//!
//! This file runs the modes in order and sums their totals. Beside it: `scenarios.rs`, which
//! scenarios run and the names filters match; `exclusions.rs`, the README's table of those
//! left out; `suite.rs`, the installed suite and one bounded run of it; `server.rs` and
//! `client.rs`, each mode's runs; `results.rs`, the verdicts read from the suite's output and
//! its `checks.json` files; `auth.rs`, the authorization runs.

use std::{fs, path::Path};

use anyhow::{Context, Result, bail};

use crate::UsageError;
use crate::cmd::target_dir;
use crate::select::Selection;
use crate::tools;

mod auth;
mod client;
mod exclusions;
mod results;
mod scenarios;
mod server;
mod suite;

use client::run_client;
use scenarios::{MODERN_SPEC_VERSION, SPEC_VERSION, Selected};
use server::run_server;
use suite::{Suite, suite_version};

/// The options of `cargo xtask conformance`: `[--list] [FILTER]...` over the scenario names
/// `server/NAME` and `client/NAME`.
pub(crate) type Options = Selection;

/// Parses the arguments of `cargo xtask conformance`.
pub(crate) fn parse(args: &[String]) -> Result<Options, UsageError> {
    Selection::parse(args, "conformance")
}

pub(crate) fn run(options: &Options) -> Result<()> {
    let suite = Suite::install()?;
    let selected = Selected::pick(&suite, options)?;
    if options.list {
        selected.print();
        return Ok(());
    }
    if selected.is_empty() {
        bail!(
            "no conformance scenario matches '{}' (see `cargo xtask conformance --list`)",
            options.filters.join("', '")
        );
    }
    eprintln!(
        "xtask: conformance with {}, node {}, spec version {SPEC_VERSION}",
        suite_version(),
        tools::node_versions().0
    );
    let out = target_dir()?.join("conformance");
    remove_dir(&out)?;
    fs::create_dir_all(&out)?;

    let Selected {
        server,
        server_all,
        client,
        modern_server,
        modern_server_all,
        modern_client,
        auth,
    } = selected;
    let mut totals = Vec::new();
    if !server.is_empty() {
        totals.push(run_server(&suite, SPEC_VERSION, &server, server_all, &out)?);
    }
    if !client.is_empty() {
        let client: Vec<&str> = client.iter().map(String::as_str).collect();
        totals.push(run_client(&suite, Some(SPEC_VERSION), &client, &out)?);
    }
    let modern_out = out.join(MODERN_SPEC_VERSION);
    fs::create_dir_all(&modern_out)?;
    if !modern_server.is_empty() {
        totals.push(run_server(
            &suite,
            MODERN_SPEC_VERSION,
            &modern_server,
            modern_server_all,
            &modern_out,
        )?);
    }
    if !modern_client.is_empty() {
        let modern_client: Vec<&str> = modern_client.iter().map(String::as_str).collect();
        totals.push(run_client(
            &suite,
            Some(MODERN_SPEC_VERSION),
            &modern_client,
            &modern_out,
        )?);
    }
    for version in auth::versions(&auth) {
        let names: Vec<&str> = auth
            .iter()
            .filter(|run| run.version == version)
            .map(|run| run.name.as_str())
            .collect();
        let dir = out
            .join("auth")
            .join(version.as_deref().unwrap_or("extension"));
        fs::create_dir_all(&dir)?;
        totals.push(run_client(&suite, version.as_deref(), &names, &dir)?);
    }
    let passed: u32 = totals.iter().map(|t| t.passed).sum();
    let failed: u32 = totals.iter().map(|t| t.failed).sum();
    let verdicts: Vec<&str> = totals.iter().filter_map(|t| t.failure.as_deref()).collect();
    println!("{passed} passed, {failed} failed");
    if !verdicts.is_empty() {
        bail!("{}; results in {}", verdicts.join("; "), out.display());
    }
    Ok(())
}

fn remove_dir(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("removing {}", dir.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_take_filters_and_list() {
        let options = parse(&args("--list sse")).unwrap();
        assert!(options.list);
        assert!(options.selects("server/server-sse-polling"));
        assert!(options.selects("client/sse-retry"));
        assert!(!options.selects("server/ping"));
        assert!(parse(&[]).unwrap().selects("server/ping"));
        assert!(parse(&args("--fast")).unwrap_err().show_usage);
    }
}
