//! Server mode: our conformance server (`examples/conformance_server/`) started once, and the
//! suite run against it, all its scenarios at once or those a filter picked one by one; then
//! what the suite's totals do not show: SEP-1699 polling that really resumed, a server that
//! lived through the run without a panic.

use std::{fs, path::Path, process::Command, time::Duration};

use anyhow::{Context, Result};

use super::results::{Totals, judge_full_run, judge_one, note_warnings, statuses, summary_lines};
use super::scenarios::{REQUIRED_SERVER_SCENARIOS, SPEC_VERSION};
use super::suite::{SCENARIO_TIMEOUT, Suite, run_suite};
use crate::cmd::build_example;
use crate::peer::{self, Server};

/// How long the suite may take over the whole server run of one revision (about 4 s when all
/// is well; each scenario has its own 30 s limit inside the suite).
const SERVER_RUN_TIMEOUT: Duration = Duration::from_secs(240);

/// Server mode: all the scenarios in one run of the suite, or those `scenarios` one by one when
/// a filter picked them.
pub(super) fn run_server(
    suite: &Suite,
    version: &str,
    scenarios: &[String],
    everything: bool,
    out: &Path,
) -> Result<Totals> {
    let exe = build_example("conformance_server")?;
    let mut command = Command::new(exe);
    command.args(["--addr", "127.0.0.1:0"]);
    if std::env::var_os("RUST_LOG").is_none() {
        command
            .env("RUST_LOG", "mcp_streamable_server=debug")
            .env("NO_COLOR", "1");
    }
    let server_err = out.join("server.err");
    let mut server = Server::start(
        command,
        &out.join("server.out"),
        &server_err,
        peer::SERVER_START_TIMEOUT,
    )
    .context("the conformance server did not start")?;
    let url = server.url().to_string();
    let results = out.join("server");
    let results_arg = results.to_string_lossy().into_owned();
    let baseline = suite.expected_failures();
    let mut totals = Totals::default();
    let runs: Vec<Option<&str>> = if everything {
        vec![None]
    } else {
        scenarios.iter().map(|s| Some(s.as_str())).collect()
    };
    for scenario in runs {
        let name = scenario.unwrap_or("all");
        let mut args = vec!["server", "--url", &url, "--spec-version", version];
        match scenario {
            Some(scenario) => args.extend(["--scenario", scenario]),
            None => args.extend(["--suite", "all"]),
        }
        args.extend(["--expected-failures", &baseline, "-o", &results_arg]);
        let timeout = if everything {
            SERVER_RUN_TIMEOUT
        } else {
            SCENARIO_TIMEOUT
        };
        let log = out.join(format!("server-{name}.log"));
        let (ended, stdout) = run_suite(suite.command(&args), &log, timeout)?;
        let run = if everything {
            // Every scenario the suite lists, and at 2025-11-25 those it must not stop listing.
            let mut expected: Vec<&str> = scenarios.iter().map(String::as_str).collect();
            if version == SPEC_VERSION {
                expected.extend(REQUIRED_SERVER_SCENARIOS);
            }
            let run = judge_full_run(&ended, &stdout, &expected);
            for line in summary_lines(&stdout) {
                println!("conformance: server {line}");
            }
            run
        } else {
            let run = judge_one(&ended, &stdout);
            println!(
                "conformance: server {name} at {version}: {} passed, {} failed",
                run.passed, run.failed
            );
            run
        };
        totals.passed += run.passed;
        totals.failed += run.failed;
        if let Some(failure) = run.failure {
            let failure = format!("server {name}: {failure} (log: {})", log.display());
            totals.failure = Some(match totals.failure.take() {
                Some(before) => format!("{before}; {failure}"),
                None => failure,
            });
        }
    }
    note_warnings(&mut totals, &results);
    check_polling(&mut totals, &results);
    if let Some(status) = server.exited() {
        totals.failure = Some(format!("the conformance server exited ({status})"));
    }
    drop(server);
    let log = fs::read_to_string(&server_err).unwrap_or_default();
    if let Some(line) = log.lines().find(|line| line.contains("panicked at")) {
        totals.failure = Some(format!("the conformance server panicked: {line}"));
    }
    println!(
        "conformance: server total at {version}: {} passed, {} failed",
        totals.passed, totals.failed
    );
    Ok(totals)
}

/// SEP-1699 polling must really have happened: `test_reconnection` closed its stream and the
/// result came on the resumed one. Had the server not closed the stream, the suite would only
/// say so as INFO.
fn check_polling(totals: &mut Totals, results: &Path) {
    let Ok(runs) = fs::read_dir(results) else {
        return;
    };
    for run in runs.filter_map(|e| e.ok().map(|e| e.path())) {
        let name = run
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if !name.starts_with("server-server-sse-polling-") {
            continue;
        }
        let checks = fs::read_to_string(run.join("checks.json")).unwrap_or_default();
        let resumed = statuses(&checks)
            .iter()
            .any(|(id, status)| id == "server-sse-disconnect-resume" && status == "SUCCESS");
        if !resumed {
            println!("conformance: server-sse-polling did not resume a closed stream ({name})");
            totals.failure = Some(match totals.failure.take() {
                Some(before) => format!("{before}; server-sse-polling did not resume"),
                None => "server-sse-polling: the stream was not closed and resumed".into(),
            });
        }
    }
}
