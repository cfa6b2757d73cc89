//! Client mode: our conformance client (`examples/conformance_client.rs`) driven by the suite,
//! one run of the suite per scenario.

use std::path::Path;

use anyhow::Result;

use super::results::{Totals, judge_one, note_warnings};
use super::suite::{SCENARIO_TIMEOUT, Suite, run_suite};
use crate::cmd::build_example;

/// Client mode: each scenario in its own run of the suite, which starts its test server and
/// runs our client against it; at `version`, or, for an extension, at none.
pub(super) fn run_client(
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
