//! `cargo xtask conformance`: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, pinned in `conformance/package.json`) against our
//! server and our client, at protocol revisions 2025-11-25 and 2026-07-28.
//!
//! - server mode: every server scenario of 2025-11-25 (`--suite all`, so the pending ones,
//!   server-sse-polling included, run too) against `examples/conformance_server.rs`, then the
//!   transport's scenarios at 2026-07-28 (the per-request protocol);
//! - client mode: the `initialize`, `tools_call` and `sse-retry` scenarios, each driving
//!   `examples/conformance_client.rs`, then the transport's client scenarios at 2026-07-28;
//! - client authorization: every scored `auth/*` scenario at each revision the suite lists it
//!   for, and the client-credentials, DPoP, enterprise-managed and workload-identity extensions
//!   (`auth.rs`), named
//!   `client/auth/NAME@REVISION` for filters.
//!
//! It prints the suite's own totals per mode and ends with `N passed, N failed`, the checks of
//! both modes; it fails if the suite reports a failure (or a stale entry of
//! `conformance/expected-failures.yml`). `conformance/README.md` says more.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::{Context, Result, bail};

use crate::UsageError;

mod auth;
use crate::cmd::{build_example, target_dir};
use crate::peer::{self, Ended, Server};
use crate::select::Selection;
use crate::tools;

/// The protocol revision the suite tests.
const SPEC_VERSION: &str = "2025-11-25";
/// The client scenarios run, in order.
const CLIENT_SCENARIOS: &[&str] = &["initialize", "tools_call", "sse-retry"];
/// The per-request revision.
const MODERN_SPEC_VERSION: &str = "2026-07-28";
/// The server scenarios of 2026-07-28 that test the transport, run one by one. The others test
/// what an application answers (MRTR, caching, subscriptions), which is not this project's.
const MODERN_SERVER_SCENARIOS: &[&str] = &[
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "http-header-validation",
    "tools-call-with-progress",
];
/// The client scenarios of 2026-07-28 that test the transport.
const MODERN_CLIENT_SCENARIOS: &[&str] = &["request-metadata", "http-standard-headers"];
/// Server scenarios a full run must include: were a new suite version to stop running one of
/// these at 2025-11-25, the run fails instead of silently testing less.
const REQUIRED_SERVER_SCENARIOS: &[&str] = &[
    "server-initialize",
    "server-session-lifecycle",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];
/// How long the suite may take over the whole server run (about 4 s when all is well; each
/// scenario has its own 30 s limit inside the suite).
const SERVER_RUN_TIMEOUT: Duration = Duration::from_secs(240);
/// How long the suite may take over one scenario.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(60);
/// The suite's entry point, under `conformance/node_modules`.
const SUITE_JS: &str = "node_modules/@modelcontextprotocol/conformance/dist/index.js";

/// The options of `cargo xtask conformance`: `[--list] [FILTER]...` over the scenario names
/// `server/NAME` and `client/NAME`.
pub(crate) type Options = Selection;

/// Parses the arguments of `cargo xtask conformance`.
pub(crate) fn parse(args: &[String]) -> Result<Options, UsageError> {
    Selection::parse(args, "conformance")
}

/// The installed suite.
#[derive(Debug)]
struct Suite {
    node: PathBuf,
    /// `conformance/`, where the suite runs.
    dir: PathBuf,
}

impl Suite {
    /// Node.js and the pinned suite, installed when their stamps do not match.
    fn install() -> Result<Suite> {
        let node = tools::node_runtime()?;
        let dir = crate::project_root().join("conformance");
        tools::npm_ci(
            &dir,
            &format!("the conformance suite ({})", suite_version()),
        )?;
        Ok(Suite { node, dir })
    }

    /// `node index.js ARGS...` in `conformance/`, in plain text.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.node);
        command
            .arg(self.dir.join(SUITE_JS))
            .args(args)
            .current_dir(&self.dir)
            .env("NO_COLOR", "1")
            .env("FORCE_COLOR", "0");
        command
    }

    /// The server scenarios the suite runs at [`SPEC_VERSION`].
    fn server_scenarios(&self) -> Result<Vec<String>> {
        let listed = crate::cmd::output(&mut self.command(&[
            "list",
            "--server",
            "--spec-version",
            SPEC_VERSION,
        ]))?;
        Ok(listed_scenarios(&listed))
    }

    /// The client authorization runs the suite lists.
    fn auth_runs(&self) -> Result<Vec<auth::Run>> {
        let listed = crate::cmd::output(&mut self.command(&["list", "--client"]))?;
        auth::runs(&listed)
    }

    /// Fails if the suite no longer has a scenario of 2026-07-28 this command runs: a new
    /// version of the suite must not test less without anyone noticing.
    fn check_modern_scenarios(&self) -> Result<()> {
        let mut listed = Vec::new();
        for mode in ["--server", "--client"] {
            let out = crate::cmd::output(&mut self.command(&[
                "list",
                mode,
                "--spec-version",
                MODERN_SPEC_VERSION,
            ]))?;
            listed.extend(listed_scenarios(&out));
        }
        let missing: Vec<&&str> = MODERN_SERVER_SCENARIOS
            .iter()
            .chain(MODERN_CLIENT_SCENARIOS)
            .filter(|s| !listed.iter().any(|l| l == **s))
            .collect();
        if !missing.is_empty() {
            bail!("the suite has no {MODERN_SPEC_VERSION} scenario named {missing:?}");
        }
        Ok(())
    }

    fn expected_failures(&self) -> String {
        self.dir
            .join("expected-failures.yml")
            .to_string_lossy()
            .into_owned()
    }
}

pub(crate) fn run(options: &Options) -> Result<()> {
    let suite = Suite::install()?;
    let server: Vec<String> = suite
        .server_scenarios()?
        .into_iter()
        .filter(|s| options.selects(&format!("server/{s}")))
        .collect();
    let client: Vec<&str> = CLIENT_SCENARIOS
        .iter()
        .copied()
        .filter(|s| options.selects(&format!("client/{s}")))
        .collect();
    let modern_server: Vec<String> = MODERN_SERVER_SCENARIOS
        .iter()
        .filter(|s| options.selects(&format!("server-{MODERN_SPEC_VERSION}/{s}")))
        .map(|s| s.to_string())
        .collect();
    let modern_client: Vec<&str> = MODERN_CLIENT_SCENARIOS
        .iter()
        .copied()
        .filter(|s| options.selects(&format!("client-{MODERN_SPEC_VERSION}/{s}")))
        .collect();
    let auth: Vec<auth::Run> = suite
        .auth_runs()?
        .into_iter()
        .filter(|run| options.selects(&run.label()))
        .collect();
    if options.list {
        server.iter().for_each(|s| println!("server/{s}"));
        client.iter().for_each(|s| println!("client/{s}"));
        auth.iter().for_each(|run| println!("{}", run.label()));
        let v = MODERN_SPEC_VERSION;
        modern_server
            .iter()
            .for_each(|s| println!("server-{v}/{s}"));
        modern_client
            .iter()
            .for_each(|s| println!("client-{v}/{s}"));
        return Ok(());
    }
    suite.check_modern_scenarios()?;
    if server.is_empty()
        && client.is_empty()
        && modern_server.is_empty()
        && modern_client.is_empty()
        && auth.is_empty()
    {
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

    let mut totals = Vec::new();
    if !server.is_empty() {
        let everything = options.filters.is_empty();
        totals.push(run_server(&suite, SPEC_VERSION, &server, everything, &out)?);
    }
    if !client.is_empty() {
        totals.push(run_client(&suite, Some(SPEC_VERSION), &client, &out)?);
    }
    let modern_out = out.join(MODERN_SPEC_VERSION);
    fs::create_dir_all(&modern_out)?;
    if !modern_server.is_empty() {
        totals.push(run_server(
            &suite,
            MODERN_SPEC_VERSION,
            &modern_server,
            false,
            &modern_out,
        )?);
    }
    if !modern_client.is_empty() {
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

/// The suite's totals for one mode, and why it failed, if it did.
#[derive(Debug, Default, PartialEq, Eq)]
struct Totals {
    passed: u32,
    failed: u32,
    failure: Option<String>,
}

/// Server mode: all the scenarios in one run of the suite, or those `scenarios` one by one when
/// a filter picked them.
fn run_server(
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
            let run = judge_full_run(&ended, &stdout);
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

/// Client mode: each scenario in its own run of the suite, which starts its test server and
/// runs our client against it; at `version`, or, for an extension, at none.
fn run_client(
    suite: &Suite,
    version: Option<&str>,
    scenarios: &[&str],
    out: &Path,
) -> Result<Totals> {
    let exe = build_example("conformance_client")?;
    let exe = exe.to_string_lossy().into_owned();
    let results = out.join("client").to_string_lossy().into_owned();
    let baseline = suite.expected_failures();
    let mut totals = Totals::default();
    let at = version.unwrap_or("extension");
    for scenario in scenarios {
        let mut args = vec!["client", "--command", &exe, "--scenario", scenario];
        if let Some(version) = version {
            args.extend(["--spec-version", version]);
        }
        args.extend(["--expected-failures", &baseline, "-o", &results]);
        let log = out.join(format!("client-{}.log", scenario.replace('/', "-")));
        let (ended, stdout) = run_suite(suite.command(&args), &log, SCENARIO_TIMEOUT)?;
        let run = judge_one(&ended, &stdout);
        println!(
            "conformance: client {scenario} at {at}: {} passed, {} failed",
            run.passed, run.failed
        );
        totals.passed += run.passed;
        totals.failed += run.failed;
        if let Some(failure) = run.failure {
            let failure = format!("client {scenario}: {failure} (log: {})", log.display());
            totals.failure = Some(match totals.failure.take() {
                Some(before) => format!("{before}; {failure}"),
                None => failure,
            });
        }
    }
    note_warnings(&mut totals, Path::new(&results));
    println!(
        "conformance: client total at {at}: {} passed, {} failed",
        totals.passed, totals.failed
    );
    Ok(totals)
}

/// Runs the suite for at most `timeout`, its stdout in `log` and its stderr beside it, and
/// returns how it ended and both outputs (the suite prints its results to either).
fn run_suite(command: Command, log: &Path, timeout: Duration) -> Result<(Ended, String)> {
    let err = log.with_extension("err");
    let (ended, mut output) = peer::run_client(command, log, &err, timeout)?;
    output.push_str(&fs::read_to_string(&err).unwrap_or_default());
    Ok((ended, output))
}

/// A full server run: the suite's `Total: N passed, N failed`, its exit status, and every
/// required scenario in its summary.
fn judge_full_run(ended: &Ended, stdout: &str) -> Totals {
    let mut totals = judge(ended, stdout, "Total: ");
    let summary = summary_lines(stdout);
    let missing: Vec<&str> = REQUIRED_SERVER_SCENARIOS
        .iter()
        .copied()
        .filter(|required| {
            let prefix = format!("{required}:");
            !summary.iter().any(|line| {
                let name = line.split_once(' ').map_or(*line, |(_, name)| name);
                name.starts_with(&prefix)
            })
        })
        .collect();
    if totals.failure.is_none() && !missing.is_empty() {
        totals.failure = Some(format!("the suite did not run {}", missing.join(", ")));
    }
    totals
}

/// A run of one scenario: the suite's `Passed: N/M, N failed, N warnings` and its exit status.
fn judge_one(ended: &Ended, stdout: &str) -> Totals {
    judge(ended, stdout, "Passed: ")
}

fn judge(ended: &Ended, stdout: &str, prefix: &str) -> Totals {
    let counts = stdout
        .lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix(prefix).and_then(counts));
    let (passed, failed) = counts.unwrap_or_default();
    let failure = match ended {
        Ended::TimedOut => {
            Some("the suite was still running at its deadline, so it was killed".into())
        }
        Ended::Exited(status) if !status.success() => Some(format!("the suite failed ({status})")),
        Ended::Exited(_) if counts.is_none() => Some("the suite printed no totals".into()),
        Ended::Exited(_) if failed > 0 => Some(format!("{failed} check(s) failed")),
        Ended::Exited(_) => None,
    };
    Totals {
        passed,
        failed,
        failure,
    }
}

/// `84 passed, 0 failed` or `1/1, 0 failed, 0 warnings` as (passed, failed).
fn counts(text: &str) -> Option<(u32, u32)> {
    let (passed, rest) = text.split_once([' ', '/'])?;
    let failed = rest
        .split(", ")
        .find_map(|part| part.strip_suffix(" failed"))?;
    Some((passed.parse().ok()?, failed.trim().parse().ok()?))
}

/// Fails `totals` for the checks the suite judged WARNING: its SHOULD checks (SEP-1699 priming,
/// retry and resumption among them) only warn, and a regression must not hide as a warning.
fn note_warnings(totals: &mut Totals, results: &Path) {
    let found = warnings(results);
    if found.is_empty() {
        return;
    }
    for warning in &found {
        println!("conformance: WARNING {warning}");
    }
    let failure = format!("{} check(s) warned", found.len());
    totals.failure = Some(match totals.failure.take() {
        Some(before) => format!("{before}; {failure}"),
        None => failure,
    });
}

/// The checks judged WARNING in the `checks.json` files under `results`, as `RUN: check-id`.
fn warnings(results: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(runs) = fs::read_dir(results) else {
        return found;
    };
    let mut runs: Vec<PathBuf> = runs.filter_map(|e| e.ok().map(|e| e.path())).collect();
    runs.sort();
    for run in runs {
        let checks = fs::read_to_string(run.join("checks.json")).unwrap_or_default();
        let name = run.file_name().unwrap_or_default().to_string_lossy();
        found.extend(
            warned_checks(&checks)
                .into_iter()
                .map(|id| format!("{name}: {id}")),
        );
    }
    found
}

/// The ids of the checks with status WARNING in a `checks.json`.
fn warned_checks(checks: &str) -> Vec<String> {
    statuses(checks)
        .into_iter()
        .filter(|(_, status)| status == "WARNING")
        .map(|(id, _)| id)
        .collect()
}

/// Each check's id and status in a `checks.json` (the suite writes it indented by two spaces,
/// so a check's own fields are the lines indented by four; deeper ones are its details).
fn statuses(checks: &str) -> Vec<(String, String)> {
    let mut id = "";
    let mut found = Vec::new();
    for line in checks.lines() {
        let Some(field) = line.strip_prefix("    ").filter(|f| !f.starts_with(' ')) else {
            continue;
        };
        let value = |key: &str| {
            let value = field.strip_prefix(&format!("\"{key}\": \""))?;
            Some(value.trim_end_matches(',').trim_end_matches('"'))
        };
        if let Some(value) = value("id") {
            id = value;
        } else if let Some(status) = value("status") {
            found.push((id.to_string(), status.to_string()));
        }
    }
    found
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

/// The scenario lines of the suite's summary (`✓ ping: 2 passed, 0 failed`) and its total.
fn summary_lines(stdout: &str) -> Vec<&str> {
    let Some((_, summary)) = stdout.split_once("=== SUMMARY ===") else {
        return Vec::new();
    };
    summary
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("✓ ") || line.starts_with("✗ "))
        .collect()
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
fn suite_version() -> String {
    let package = crate::project_root().join("conformance/package.json");
    let package = fs::read_to_string(package).unwrap_or_default();
    let name = "@modelcontextprotocol/conformance";
    format!(
        "{name} {}",
        tools::pinned_npm(&package, name).unwrap_or("?")
    )
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

    fn exited(code: i32) -> Ended {
        let status = Command::new("sh")
            .args(["-c", &format!("exit {code}")])
            .status()
            .unwrap();
        Ended::Exited(status)
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

    #[test]
    fn the_suites_totals_are_read() {
        assert_eq!(counts("84 passed, 0 failed"), Some((84, 0)));
        assert_eq!(counts("3/3, 0 failed, 0 warnings"), Some((3, 0)));
        assert_eq!(counts("1/2, 1 failed, 0 warnings"), Some((1, 1)));
        assert_eq!(counts("passed"), None);
        let full = "=== Running scenario: ping ===\n\n=== SUMMARY ===\n✓ ping: 2 passed, 0 failed\n✗ tools-list: 2 passed, 1 failed\n\nTotal: 4 passed, 1 failed\n";
        assert_eq!(
            summary_lines(full),
            [
                "✓ ping: 2 passed, 0 failed",
                "✗ tools-list: 2 passed, 1 failed"
            ]
        );
        let totals = judge(&exited(1), full, "Total: ");
        assert_eq!((totals.passed, totals.failed), (4, 1));
        assert!(totals.failure.unwrap().contains("exit status: 1"));
        let one = "Checks:\n...\nTest Results:\nPassed: 3/3, 0 failed, 0 warnings\n";
        assert_eq!(
            judge_one(&exited(0), one),
            Totals {
                passed: 3,
                failed: 0,
                failure: None
            }
        );
        assert!(judge_one(&exited(0), "nothing").failure.is_some());
        assert!(judge_one(&Ended::TimedOut, one).failure.is_some());
    }

    #[test]
    fn a_full_run_must_include_the_required_scenarios() {
        let mut full = String::from("=== SUMMARY ===\n");
        for scenario in REQUIRED_SERVER_SCENARIOS {
            full.push_str(&format!("✓ {scenario}: 2 passed, 0 failed\n"));
        }
        full.push_str("\nTotal: 10 passed, 0 failed\n");
        assert_eq!(judge_full_run(&exited(0), &full).failure, None);
        let without_polling = full.replace("✓ server-sse-polling: 2 passed, 0 failed\n", "");
        assert_eq!(
            judge_full_run(&exited(0), &without_polling).failure,
            Some("the suite did not run server-sse-polling".into())
        );
    }

    #[test]
    fn warned_checks_are_found_at_the_top_level_only() {
        let checks = r#"[
  {
    "id": "server-sse-priming-event",
    "status": "SUCCESS",
    "details": {
      "id": "nested",
      "status": "WARNING"
    }
  },
  {
    "id": "server-sse-disconnect-resume",
    "status": "WARNING",
    "errorMessage": "Server did not send tool response after client reconnected"
  }
]"#;
        assert_eq!(warned_checks(checks), ["server-sse-disconnect-resume"]);
        assert_eq!(
            statuses(checks)[0],
            ("server-sse-priming-event".into(), "SUCCESS".into())
        );
        assert!(warned_checks("[]").is_empty());
    }

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
