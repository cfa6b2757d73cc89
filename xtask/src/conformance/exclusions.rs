//! The scenarios the suite lists that this command does not run, each with why: the table
//! under `## Not run` in `conformance/README.md`, so that what is left out is written where
//! the results are, and read from there.
//!
//! ```text
//! | mode | revision | scenario | why |
//! |---|---|---|---|
//! | client | 2026-07-28 | http-custom-headers | the client side ... is not done yet |
//! ```

use anyhow::{Result, bail};

/// The heading the table sits under.
const HEADING: &str = "## Not run";

/// One scenario left out at one revision in one mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Exclusion {
    /// `server` or `client`.
    pub(super) mode: String,
    pub(super) revision: String,
    pub(super) scenario: String,
    pub(super) why: String,
}

/// The exclusions in the README's text. A row without a reason, or of an unknown mode, fails.
pub(super) fn parse(readme: &str) -> Result<Vec<Exclusion>> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in readme.lines() {
        if line.starts_with("## ") {
            inside = line.trim() == HEADING;
            continue;
        }
        let line = line.trim();
        if !inside || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().trim_matches('`'))
            .collect();
        if cells.first() == Some(&"mode") || cells.iter().all(|c| c.chars().all(|ch| ch == '-')) {
            continue;
        }
        let [mode, revision, scenario, why] = cells[..] else {
            bail!("conformance/README.md, {HEADING}: a row of four cells, not {line:?}");
        };
        if mode != "server" && mode != "client" {
            bail!("conformance/README.md, {HEADING}: mode {mode:?} is neither server nor client");
        }
        if why.is_empty() || scenario.is_empty() || revision.is_empty() {
            bail!(
                "conformance/README.md, {HEADING}: {line:?} must name a revision, a scenario and why"
            );
        }
        rows.push(Exclusion {
            mode: mode.to_owned(),
            revision: revision.to_owned(),
            scenario: scenario.to_owned(),
            why: why.to_owned(),
        });
    }
    Ok(rows)
}

/// The scenarios to run among those the suite `listed` in `mode` at `revision`: all but the
/// excluded ones. An exclusion of a scenario the suite does not list fails: it is stale.
pub(super) fn apply(
    exclusions: &[Exclusion],
    mode: &str,
    revision: &str,
    listed: &[String],
) -> Result<Vec<String>> {
    let here: Vec<&Exclusion> = exclusions
        .iter()
        .filter(|e| e.mode == mode && e.revision == revision)
        .collect();
    let stale: Vec<&str> = here
        .iter()
        .filter(|e| !listed.contains(&e.scenario))
        .map(|e| e.scenario.as_str())
        .collect();
    if !stale.is_empty() {
        bail!(
            "conformance/README.md excludes {mode} scenario(s) {stale:?} at {revision}, which the suite no longer lists: remove the row"
        );
    }
    Ok(listed
        .iter()
        .filter(|s| !here.iter().any(|e| &e.scenario == *s))
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = "# Conformance\n\n| mode | scenarios |\n|---|---|\n| server | 40 |\n\n\
        ## Not run\n\nText.\n\n| mode | revision | scenario | why |\n|---|---|---|---|\n\
        | client | 2026-07-28 | `http-custom-headers` | not done yet |\n\
        | server | 2025-11-25 | ping | upstream bug #1 |\n\n## Later\n\n| a | b | c | d |\n";

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_table_under_its_heading_is_read_and_no_other() {
        let rows = parse(README).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0],
            Exclusion {
                mode: "client".into(),
                revision: "2026-07-28".into(),
                scenario: "http-custom-headers".into(),
                why: "not done yet".into(),
            }
        );
        assert_eq!(rows[1].scenario, "ping");
    }

    #[test]
    fn a_row_without_a_reason_or_with_an_unknown_mode_fails() {
        let no_reason = README.replace("not done yet", "");
        assert!(parse(&no_reason).is_err());
        let bad_mode = README.replace("| client | 2026", "| both | 2026");
        assert!(parse(&bad_mode).is_err());
        let three_cells = README.replace("| ping | upstream bug #1 |", "| ping |");
        assert!(parse(&three_cells).is_err());
    }

    #[test]
    fn excluded_scenarios_are_not_run_and_stale_exclusions_fail() {
        let rows = parse(README).unwrap();
        let listed = names(&["tools_call", "http-custom-headers"]);
        assert_eq!(
            apply(&rows, "client", "2026-07-28", &listed).unwrap(),
            ["tools_call"]
        );
        // Another revision or mode: nothing excluded.
        assert_eq!(
            apply(&rows, "client", "2025-11-25", &listed).unwrap(),
            listed
        );
        let gone = names(&["tools_call"]);
        let error = apply(&rows, "client", "2026-07-28", &gone).unwrap_err();
        assert!(error.to_string().contains("http-custom-headers"), "{error}");
    }
}
