//! The suite's verdicts: its totals read from its output, the scenarios a full run must have
//! run, and the checks it only warned about read from its `checks.json` files.

use std::{
    fs,
    path::{Path, PathBuf},
};

use crate::peer::Ended;

/// The suite's totals for one mode, and why it failed, if it did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Totals {
    pub(super) passed: u32,
    pub(super) failed: u32,
    pub(super) failure: Option<String>,
}

/// A full server run: the suite's `Total: N passed, N failed`, its exit status, and every
/// `expected` scenario in its summary.
pub(super) fn judge_full_run(ended: &Ended, stdout: &str, expected: &[&str]) -> Totals {
    let mut totals = judge(ended, stdout, "Total: ");
    let summary = summary_lines(stdout);
    let missing: Vec<&str> = expected
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
pub(super) fn judge_one(ended: &Ended, stdout: &str) -> Totals {
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
pub(super) fn note_warnings(totals: &mut Totals, results: &Path) {
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
pub(super) fn statuses(checks: &str) -> Vec<(String, String)> {
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

/// The scenario lines of the suite's summary (`✓ ping: 2 passed, 0 failed`) and its total.
pub(super) fn summary_lines(stdout: &str) -> Vec<&str> {
    let Some((_, summary)) = stdout.split_once("=== SUMMARY ===") else {
        return Vec::new();
    };
    summary
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("✓ ") || line.starts_with("✗ "))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn exited(code: i32) -> Ended {
        let status = Command::new("sh")
            .args(["-c", &format!("exit {code}")])
            .status()
            .unwrap();
        Ended::Exited(status)
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
    fn a_full_run_must_include_the_expected_scenarios() {
        let expected = ["server-initialize", "server-sse-polling", "caching"];
        let mut full = String::from("=== SUMMARY ===\n");
        for scenario in expected {
            full.push_str(&format!("✓ {scenario}: 2 passed, 0 failed\n"));
        }
        full.push_str("\nTotal: 6 passed, 0 failed\n");
        assert_eq!(judge_full_run(&exited(0), &full, &expected).failure, None);
        let without_polling = full.replace("✓ server-sse-polling: 2 passed, 0 failed\n", "");
        assert_eq!(
            judge_full_run(&exited(0), &without_polling, &expected).failure,
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
}
