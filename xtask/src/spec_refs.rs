//! A tidy test that keeps SPEC.md true to the tree: every test its rows name in **Pinned by**
//! exists as a function, and every `.rs` file or folder they name exists. A row whose tests were
//! renamed or removed would otherwise go on promising what nothing checks.

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
            files.iter().any(|f| f.contains(&format!("/{cited}")))
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

/// The citations of the **Pinned by** paragraphs, with their lines: each code span that is a
/// `.rs` path, a folder (`src/core/rate_limit/`), or a test's name (lowercase, digits and
/// underscores, with an underscore). A paragraph runs from its `**Pinned by:**` to a blank line,
/// a heading or the next bullet of the row.
fn pinned(spec: &str) -> Vec<(usize, String)> {
    let mut cited = Vec::new();
    let mut inside = false;
    for (i, line) in spec.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.contains("**Pinned by:**") {
            inside = true;
        } else if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("- **") {
            inside = false;
        }
        if !inside {
            continue;
        }
        for span in code_spans(line) {
            if is_citation(span) {
                cited.push((i + 1, span.to_owned()));
            }
        }
    }
    cited
}

/// The texts between pairs of backticks on `line`.
fn code_spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

fn is_citation(span: &str) -> bool {
    let path_like = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'))
    };
    if span.ends_with(".rs") || (span.ends_with('/') && span.contains('/')) {
        return path_like(span);
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
fn functions(root: &Path, files: &[String]) -> HashSet<String> {
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
Text with `not_cited_here` outside the pins.
- **Decided here:** `also_not_cited`.
- **Pinned by:** `rows.rs`: `s1_exists`,
  `s1_was_renamed`; `src/core/gone.rs`: `unit_test_here`; `src/core/rate_limit/`,
  `cargo xtask ci` and `Config::rate_limit` are not citations.

- **Pinned by:** `missing_dir/`
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
    fn tests_and_files_cited_in_pins_are_looked_for_and_others_are_not() {
        let functions: HashSet<String> = ["s1_exists", "unit_test_here"].map(String::from).into();
        let missing = check(SPEC, &files(), &functions);
        let cited: Vec<(&str, &str)> = missing.iter().map(|m| (m.what, m.cited.as_str())).collect();
        assert_eq!(
            cited,
            [
                ("the test", "s1_was_renamed"),
                ("the file", "src/core/gone.rs"),
                ("the file", "missing_dir/"),
            ]
        );
        assert_eq!(missing[0].line, 5);
    }

    #[test]
    fn a_path_matches_whole_components_only() {
        assert!(ends_with_path("crates/a/tests/it/rows.rs", "rows.rs"));
        assert!(ends_with_path("crates/a/tests/it/rows.rs", "it/rows.rs"));
        assert!(!ends_with_path("crates/a/tests/it/arrows.rs", "rows.rs"));
    }
}
