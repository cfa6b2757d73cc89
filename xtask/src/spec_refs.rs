//! A tidy test that keeps SPEC.md true to the tree: every test its rows name in **Pinned by**
//! (a paragraph of a row, or the last column of a table of rows) exists as a function, and every
//! `.rs` file or folder it names, pinned or not, exists. A row whose tests were renamed or
//! removed would otherwise go on promising what nothing checks.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

/// One thing a row cites that the tree does not have.
#[derive(Debug, PartialEq, Eq)]
struct Missing {
    line: usize,
    cited: String,
    what: &'static str,
}

#[test]
fn every_test_and_file_spec_md_cites_exists() {
    let root = crate::project_root();
    let spec = fs::read_to_string(root.join("SPEC.md")).expect("SPEC.md is readable");
    let files = rust_files(&root);
    assert!(files.len() > 100, "found only {} .rs files", files.len());
    let functions = functions(&root, &files);
    let cited = pinned(&spec).len();
    assert!(
        cited > 200,
        "found only {cited} citations in SPEC.md's pins"
    );
    let missing = check(&spec, &files, &functions);
    let list: Vec<String> = missing
        .iter()
        .map(|m| {
            format!(
                "  SPEC.md:{}: {} `{}` does not exist",
                m.line, m.what, m.cited
            )
        })
        .collect();
    assert!(list.is_empty(), "SPEC.md cites:\n{}", list.join("\n"));
}

/// What the **Pinned by** paragraphs of `spec` cite and the tree lacks: `files` are the `.rs`
/// paths (relative, `/`-separated), `functions` every function name in them.
fn check(spec: &str, files: &[String], functions: &HashSet<String>) -> Vec<Missing> {
    let mut missing = Vec::new();
    for (line, cited) in pinned(spec) {
        let found = if cited.ends_with(".rs") {
            files.iter().any(|f| ends_with_path(f, &cited))
        } else if cited.ends_with('/') {
            files
                .iter()
                .any(|f| f.starts_with(&cited) || f.contains(&format!("/{cited}")))
        } else {
            functions.contains(cited.as_str())
        };
        if !found {
            let what = if cited.ends_with(".rs") || cited.ends_with('/') {
                "the file"
            } else {
                "the test"
            };
            missing.push(Missing { line, cited, what });
        }
    }
    missing
}

/// Whether `path` is `cited` or ends with `/` and `cited`.
fn ends_with_path(path: &str, cited: &str) -> bool {
    path == cited || path.ends_with(&format!("/{cited}"))
}

/// The citations of `spec`, with their lines: each code span that is a `.rs` path or a folder
/// (`src/core/rate_limit/`) wherever it is, and in the **Pinned by** paragraphs and columns each
/// one that is a test's name (lowercase, digits and underscores, with an underscore). A
/// paragraph runs from its `**Pinned by:**` to a blank line, a heading or the next bullet of the
/// row; a column is the last one of a table whose header names it `pinned by`, and runs to the
/// table's end.
fn pinned(spec: &str) -> Vec<(usize, String)> {
    let mut cited = Vec::new();
    let mut inside = false;
    let mut in_pinned_table = false;
    for (i, line) in spec.lines().enumerate() {
        let trimmed = line.trim_start();
        // The part of the line that pins tests, and the rest, where only paths count.
        let (rest, pins) = match split_last_cell(trimmed) {
            Some((_, last)) if last.trim().eq_ignore_ascii_case("pinned by") => {
                in_pinned_table = true;
                (line, "")
            }
            Some((cells, last)) if in_pinned_table => (cells, last),
            Some(_) => (line, ""),
            None => {
                in_pinned_table = false;
                if trimmed.contains("**Pinned by:**") {
                    inside = true;
                } else if trimmed.is_empty()
                    || trimmed.starts_with('#')
                    || trimmed.starts_with("- **")
                {
                    inside = false;
                }
                if inside { ("", line) } else { (line, "") }
            }
        };
        let paths = code_spans(rest).filter(|span| is_path(span));
        let pinned = code_spans(pins).filter(|span| is_citation(span));
        cited.extend(paths.chain(pinned).map(|span| (i + 1, span.to_owned())));
    }
    cited
}

/// A table row split before its last cell (`| a | b |` gives `| a |` and ` b `); `None` for a
/// line that is not a table row.
fn split_last_cell(line: &str) -> Option<(&str, &str)> {
    let row = line.trim_end();
    let inner = row.strip_prefix('|')?.strip_suffix('|')?;
    let at = inner.rfind('|').map_or(0, |at| at + 1);
    Some((&row[..=at], &inner[at..]))
}

/// The texts between pairs of backticks on `line`.
fn code_spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

/// Whether `span` names a `.rs` file or a folder of the tree.
fn is_path(span: &str) -> bool {
    let path_like = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'))
    };
    (span.ends_with(".rs") || span.ends_with('/')) && path_like(span)
}

fn is_citation(span: &str) -> bool {
    if span.ends_with(".rs") || span.ends_with('/') {
        return is_path(span);
    }
    span.contains('_')
        && span
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The `.rs` files of the tree, relative and `/`-separated, build output and tools left out.
fn rust_files(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs")
                && let Ok(rel) = path.strip_prefix(root)
            {
                files.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.sort();
    files
}

/// Every function name declared in `files` (`fn NAME`).
pub(crate) fn functions(root: &Path, files: &[String]) -> HashSet<String> {
    let mut names = HashSet::new();
    for file in files {
        let Ok(text) = fs::read_to_string(root.join(file)) else {
            continue;
        };
        for (at, _) in text.match_indices("fn ") {
            let rest = &text[at + 3..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "\
### S1. A row
Text with `not_cited_here` outside the pins, but `crates/a/` and `crates/b/src/gone.rs` are.
- **Decided here:** `also_not_cited`.
- **Pinned by:** `rows.rs`: `s1_exists`,
  `s1_was_renamed`; `src/core/gone.rs`: `unit_test_here`; `src/core/rate_limit/`,
  `cargo xtask ci` and `Config::rate_limit` are not citations.

- **Pinned by:** `missing_dir/`

| # | rule | pinned by |
|---|---|---|
| T1 | `not_a_pin_either` | `rows.rs`: `t1_exists`, `t1_gone`; `src/core/gone.rs`: `unit_test_here` |

| # | what |
|---|---|
| T2 | `not_in_a_pinned_table` |
";

    fn files() -> Vec<String> {
        [
            "crates/a/tests/it/rows.rs",
            "crates/a/src/core/rate_limit/mod.rs",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn tests_cited_in_pins_and_files_cited_anywhere_are_looked_for() {
        let functions: HashSet<String> = ["s1_exists", "t1_exists", "unit_test_here"]
            .map(String::from)
            .into();
        let missing = check(SPEC, &files(), &functions);
        let cited: Vec<(&str, &str)> = missing.iter().map(|m| (m.what, m.cited.as_str())).collect();
        assert_eq!(
            cited,
            [
                ("the file", "crates/b/src/gone.rs"),
                ("the test", "s1_was_renamed"),
                ("the file", "src/core/gone.rs"),
                ("the file", "missing_dir/"),
                ("the test", "t1_gone"),
                ("the file", "src/core/gone.rs"),
            ]
        );
        assert_eq!(missing[0].line, 2);
        assert_eq!(missing[1].line, 5);
        assert_eq!(missing[5].line, 12);
    }

    #[test]
    fn a_table_row_is_split_before_its_last_cell() {
        assert_eq!(
            split_last_cell("| J1 | rule | `a_test` |"),
            Some(("| J1 | rule |", " `a_test` "))
        );
        assert_eq!(split_last_cell("|---|---|"), Some(("|---|", "---")));
        assert_eq!(split_last_cell("| one |"), Some(("|", " one ")));
        assert_eq!(split_last_cell("- **Pinned by:** `a_test`"), None);
    }

    #[test]
    fn a_path_matches_whole_components_only() {
        assert!(ends_with_path("crates/a/tests/it/rows.rs", "rows.rs"));
        assert!(ends_with_path("crates/a/tests/it/rows.rs", "it/rows.rs"));
        assert!(!ends_with_path("crates/a/tests/it/arrows.rs", "rows.rs"));
    }
}
