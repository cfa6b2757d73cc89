//! Tidy tests: checks over the whole source tree that keep it clean, run by `cargo test -p xtask`
//! (and so by `cargo xtask ci`).
//!
//! The checkers are small functions over a path and a text, tested on in-memory strings below;
//! the `tidy` test runs them over the repository and lists every finding as `path:line: problem`.

use std::{
    fmt, fs,
    path::{Path, PathBuf},
    process::Command,
};

/// A file longer than this is two things; see STYLE.md.
const MAX_LINES: usize = 800;

/// Text files checked for trailing whitespace and a final newline, by extension.
const WHITESPACE_EXTENSIONS: &[&str] = &[
    "rs", "toml", "md", "yml", "yaml", "json", "py", "ts", "js", "mjs", "sh",
];

/// Text files checked for trailing whitespace and a final newline, by path.
const WHITESPACE_FILES: &[&str] = &[".ci/run"];

/// Directories never walked when git cannot list the files.
const SKIPPED_DIRS: &[&str] = &["target", ".git", ".tools", "node_modules"];

/// Forbidden in `.rs` files. The needles are built from pieces so that this file does not trip
/// its own check.
const FORBIDDEN: &[&str] = &[
    concat!("to", "do!("),
    concat!("db", "g!("),
    concat!("unimple", "mented!("),
    concat!("#[", "ignore"),
];

/// One problem: `path:line: problem`, or `path: problem` for the file as a whole.
#[derive(Debug, PartialEq, Eq)]
struct Finding {
    path: String,
    line: Option<usize>,
    problem: String,
}

impl Finding {
    fn at_line(path: &str, line: usize, problem: impl Into<String>) -> Finding {
        Finding {
            path: path.to_string(),
            line: Some(line),
            problem: problem.into(),
        }
    }

    fn in_file(path: &str, problem: impl Into<String>) -> Finding {
        Finding {
            path: path.to_string(),
            line: None,
            problem: problem.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path, self.problem),
            None => write!(f, "{}: {}", self.path, self.problem),
        }
    }
}

#[test]
fn tidy() {
    let root = crate::project_root();
    let files = source_files(&root);
    assert!(
        files.iter().any(|file| file == "xtask/src/tidy.rs"),
        "tidy: listed no files under {}, so it would check nothing",
        root.display()
    );
    let findings = check_tree(&root, &files);
    if !findings.is_empty() {
        let list: Vec<String> = findings
            .iter()
            .map(|finding| format!("  {finding}"))
            .collect();
        panic!(
            "tidy found {} problem(s):\n{}\n",
            findings.len(),
            list.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The tree: which files, and which checks apply to each.

/// The files to check, as `/`-separated paths relative to `root`: those git tracks plus new ones
/// it does not ignore (so work not yet committed is checked too), or, without git, a walk of the
/// tree that skips build output and installed tools.
pub(crate) fn source_files(root: &Path) -> Vec<String> {
    let git = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output();
    match git {
        Ok(output) if output.status.success() => {
            let mut files: Vec<String> = String::from_utf8_lossy(&output.stdout)
                .split('\0')
                .filter(|path| !path.is_empty())
                .map(String::from)
                .collect();
            files.sort();
            files.dedup();
            files
        }
        _ => walk(root),
    }
}

fn walk(root: &Path) -> Vec<String> {
    fn visit(root: &Path, dir: &Path, files: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                let name = entry.file_name();
                if !SKIPPED_DIRS.iter().any(|skipped| name == *skipped) {
                    visit(root, &path, files);
                }
            } else if kind.is_file() {
                let relative = path.strip_prefix(root).unwrap_or(&path);
                files.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut files = Vec::new();
    visit(root, root, &mut files);
    files.sort();
    files
}

fn check_tree(root: &Path, files: &[String]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for path in files {
        if !is_rust(path) && !is_whitespace_checked(path) {
            continue;
        }
        match fs::read_to_string(root.join(path)) {
            Ok(text) => check_file(path, &text, &mut findings),
            // Deleted in the work tree but still in git's index.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => findings.push(Finding::in_file(path, format!("cannot read: {error}"))),
        }
    }
    check_crates(root, &mut findings);
    findings
}

fn check_file(path: &str, text: &str, findings: &mut Vec<Finding>) {
    if is_rust(path) {
        check_forbidden(path, text, findings);
        check_tabs(path, text, findings);
        if path.starts_with("crates/") {
            check_length(path, text, findings);
        }
    }
    if is_whitespace_checked(path) {
        check_whitespace(path, text, findings);
    }
}

fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map(|(_, extension)| extension)
}

fn is_rust(path: &str) -> bool {
    extension(path) == Some("rs")
}

fn is_whitespace_checked(path: &str) -> bool {
    WHITESPACE_FILES.contains(&path)
        || extension(path).is_some_and(|extension| WHITESPACE_EXTENSIONS.contains(&extension))
}

// ---------------------------------------------------------------------------------------------
// Checks of one file's text.

fn check_forbidden(path: &str, text: &str, findings: &mut Vec<Finding>) {
    for (number, line) in (1..).zip(text.lines()) {
        for needle in FORBIDDEN.iter().filter(|needle| line.contains(**needle)) {
            findings.push(Finding::at_line(
                path,
                number,
                format!("`{needle}` left in"),
            ));
        }
    }
}

fn check_tabs(path: &str, text: &str, findings: &mut Vec<Finding>) {
    for (number, line) in (1..).zip(text.lines()) {
        if line.contains('\t') {
            findings.push(Finding::at_line(
                path,
                number,
                "tab character (indent with spaces)",
            ));
        }
    }
}

fn check_whitespace(path: &str, text: &str, findings: &mut Vec<Finding>) {
    for (number, line) in (1..).zip(text.lines()) {
        if line.ends_with([' ', '\t']) {
            findings.push(Finding::at_line(path, number, "trailing whitespace"));
        }
    }
    if !text.is_empty() && !text.ends_with('\n') {
        findings.push(Finding::in_file(path, "no newline at end of file"));
    }
}

fn check_length(path: &str, text: &str, findings: &mut Vec<Finding>) {
    let lines = text.lines().count();
    if lines > MAX_LINES {
        let problem = format!("{lines} lines, more than {MAX_LINES}: split it");
        findings.push(Finding::in_file(path, problem));
    }
}

// ---------------------------------------------------------------------------------------------
// Checks of the crates under `crates/`.

fn check_crates(root: &Path, findings: &mut Vec<Finding>) {
    let readme = fs::read_to_string(root.join("README.md")).ok();
    let table = readme.as_deref().map(crate_table);
    match &table {
        None => {
            let problem = "missing: the root README must exist and list every crate under crates/";
            findings.push(Finding::in_file("README.md", problem));
        }
        Some(rows) if rows.is_empty() => {
            let problem = "no crate table (a table whose first column is `crate`)";
            findings.push(Finding::in_file("README.md", problem));
        }
        Some(_) => {}
    }
    let mut packages = Vec::new();
    for dir in crate_dirs(root) {
        let name = dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        let rel = format!("crates/{name}");
        if !dir.join("README.md").is_file() {
            findings.push(Finding::in_file(&format!("{rel}/README.md"), "missing"));
        }
        let lib = format!("{rel}/src/lib.rs");
        match fs::read_to_string(dir.join("src/lib.rs")) {
            Ok(text) => check_lib_rs(&lib, &text, findings),
            Err(_) => findings.push(Finding::in_file(
                &lib,
                "missing: a crate under crates/ is a library",
            )),
        }
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        let package = package_name(&manifest).unwrap_or_else(|| name.clone());
        if let Some(rows) = table.as_ref().filter(|rows| !rows.is_empty())
            && !rows.iter().any(|(_, listed)| *listed == package)
        {
            let problem = format!("the crate table does not list `{package}` ({rel})");
            findings.push(Finding::in_file("README.md", problem));
        }
        packages.push(package);
    }
    for (line, listed) in table.iter().flatten() {
        if !packages.contains(listed) {
            let problem =
                format!("the crate table lists `{listed}`, which is no crate under crates/");
            findings.push(Finding::at_line("README.md", *line, problem));
        }
    }
}

/// The rows of the README's crate table, the table whose header's first cell is `crate`: each
/// row's line and the crate its first cell names (its first code span, or its text).
fn crate_table(readme: &str) -> Vec<(usize, String)> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for (number, line) in (1..).zip(readme.lines()) {
        let Some(row) = line.trim().strip_prefix('|') else {
            in_table = false;
            continue;
        };
        let first = row.split('|').next().unwrap_or("").trim();
        if first == "crate" {
            in_table = true;
        } else if in_table && !first.starts_with("---") {
            let named = first.split('`').nth(1).unwrap_or(first);
            rows.push((number, named.trim_matches(['[', ']']).to_string()));
        }
    }
    rows
}

/// The directories under `crates/` that hold a `Cargo.toml`, sorted.
pub(crate) fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root.join("crates")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// A crate's `lib.rs` opens with its crate documentation and denies missing docs.
fn check_lib_rs(path: &str, text: &str, findings: &mut Vec<Finding>) {
    let first = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    // `#![doc = include_str!("../README.md")]` is crate documentation too.
    if !first.starts_with("//!") && !first.starts_with("#![doc") {
        findings.push(Finding::at_line(
            path,
            1,
            "no crate documentation (`//!`) at the top",
        ));
    }
    if !denies_missing_docs(text) {
        findings.push(Finding::in_file(path, "no `#![deny(missing_docs)]`"));
    }
}

/// Whether a `#![deny(...)]` or `#![forbid(...)]` attribute, on one line or several, names
/// `missing_docs`.
fn denies_missing_docs(text: &str) -> bool {
    ["#![deny(", "#![forbid("].iter().any(|opening| {
        text.match_indices(opening).any(|(start, _)| {
            let rest = &text[start..];
            let attribute = rest.find(")]").map_or(rest, |end| &rest[..end]);
            mentions(attribute, "missing_docs")
        })
    })
}

/// Whether `name` appears in `text` as a whole word: `mcp-sse` is in "`mcp-sse`" and
/// "crates/mcp-sse/", not in "mcp-sse-extra".
pub(crate) fn mentions(text: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(name).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// The `name` of the `[package]` section of a `Cargo.toml`.
pub(crate) fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if key.trim() == "name" {
                return Some(value.trim().trim_matches('"').to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(check: fn(&str, &str, &mut Vec<Finding>), path: &str, text: &str) -> Vec<String> {
        let mut findings = Vec::new();
        check(path, text, &mut findings);
        findings.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn trailing_whitespace_is_found() {
        assert_eq!(
            findings(check_whitespace, "a.md", "a \n"),
            ["a.md:1: trailing whitespace"]
        );
        assert_eq!(
            findings(check_whitespace, "a.md", "a\nb\t\n"),
            ["a.md:2: trailing whitespace"]
        );
        assert_eq!(
            findings(check_whitespace, "a.md", "a \r\n"),
            ["a.md:1: trailing whitespace"]
        );
        assert!(findings(check_whitespace, "a.md", "a\n").is_empty());
        assert!(findings(check_whitespace, "a.md", "a\r\n\n").is_empty());
    }

    #[test]
    fn missing_final_newline_is_found() {
        assert_eq!(
            findings(check_whitespace, "a.rs", "a"),
            ["a.rs: no newline at end of file"]
        );
        assert!(findings(check_whitespace, "a.rs", "").is_empty());
    }

    #[test]
    fn forbidden_macros_are_found() {
        let text = concat!("fn f() {\n    to", "do!()\n}\n#[", "ignore]\n");
        assert_eq!(
            findings(check_forbidden, "a.rs", text),
            [
                concat!("a.rs:2: `to", "do!(` left in"),
                concat!("a.rs:4: `#[", "ignore` left in"),
            ]
        );
        let text = concat!("let x = d", "bg!(1) + unimple", "mented!();\n");
        assert_eq!(findings(check_forbidden, "a.rs", text).len(), 2);
        assert!(findings(check_forbidden, "a.rs", "// a TODO with a tracking issue\n").is_empty());
    }

    #[test]
    fn tabs_are_found() {
        assert_eq!(
            findings(check_tabs, "a.rs", "\tx\n"),
            ["a.rs:1: tab character (indent with spaces)"]
        );
        assert!(findings(check_tabs, "a.rs", "    x\n").is_empty());
    }

    #[test]
    fn long_files_are_found() {
        let long = "x\n".repeat(MAX_LINES + 1);
        assert_eq!(
            findings(check_length, "a.rs", &long),
            ["a.rs: 801 lines, more than 800: split it"]
        );
        assert!(findings(check_length, "a.rs", &"x\n".repeat(MAX_LINES)).is_empty());
    }

    #[test]
    fn lib_rs_needs_crate_docs_and_deny_missing_docs() {
        let good = "//! A crate.\n#![deny(missing_docs)]\n";
        assert!(findings(check_lib_rs, "lib.rs", good).is_empty());
        let several =
            "\n//! A crate.\n#![deny(\n    missing_debug_implementations,\n    missing_docs,\n)]\n";
        assert!(findings(check_lib_rs, "lib.rs", several).is_empty());
        let readme = "#![doc = include_str!(\"../README.md\")]\n#![forbid(missing_docs)]\n";
        assert!(findings(check_lib_rs, "lib.rs", readme).is_empty());
        let bad = "#![warn(missing_docs)]\n//! Too late.\n";
        assert_eq!(
            findings(check_lib_rs, "lib.rs", bad),
            [
                "lib.rs:1: no crate documentation (`//!`) at the top",
                "lib.rs: no `#![deny(missing_docs)]`",
            ]
        );
        assert!(!denies_missing_docs(
            "#![deny(missing_docs_in_private_items)]\n"
        ));
    }

    #[test]
    fn the_crate_table_is_read_from_its_rows() {
        let readme = "| module | crate |\n|---|---|\n| `sse` | `mcp-sse` |\n\n## The crates\n\n\
                      | crate | what it is |\n|---|---|\n| [`mcp-sse`](crates/mcp-sse) | SSE |\n\
                      | mcp-jsonrpc | JSON-RPC |\n\nAfter | the table.\n";
        assert_eq!(
            crate_table(readme),
            [(9, "mcp-sse".to_string()), (10, "mcp-jsonrpc".to_string())]
        );
        assert!(crate_table("No table.\n").is_empty());
    }

    #[test]
    fn mentions_whole_words_only() {
        assert!(mentions("see `mcp-sse` and", "mcp-sse"));
        assert!(mentions(
            "[sse](crates/mcp-sse/README.md)",
            "crates/mcp-sse"
        ));
        assert!(mentions("mcp-sse", "mcp-sse"));
        assert!(!mentions("mcp-sse-extra", "mcp-sse"));
        assert!(!mentions("the-mcp-sse", "mcp-sse"));
    }

    #[test]
    fn package_name_is_read_from_the_package_section() {
        let manifest =
            "[workspace]\nname = \"no\"\n[package]\nversion = \"0.1.0\"\nname = \"mcp-sse\"\n";
        assert_eq!(package_name(manifest).as_deref(), Some("mcp-sse"));
        assert_eq!(package_name("[dependencies]\nname = \"x\"\n"), None);
    }

    #[test]
    fn files_are_classified_by_extension_and_path() {
        assert!(is_rust("crates/a/src/lib.rs"));
        assert!(is_whitespace_checked(".ci/run"));
        assert!(is_whitespace_checked("web/app.mjs"));
        assert!(!is_whitespace_checked("LICENSE-MIT"));
        assert!(!is_whitespace_checked("tests/fixtures/stream.sse"));
        assert!(!is_whitespace_checked("rs"));
    }

    /// The whole pipeline on a small tree on disk: the walk, the file checks and the crate checks.
    #[test]
    fn a_small_untidy_tree_is_reported() {
        let root = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write("crates/good/Cargo.toml", "[package]\nname = \"good\"\n");
        write("crates/good/README.md", "# good\n");
        write(
            "crates/good/src/lib.rs",
            "//! Good.\n#![deny(missing_docs)]\n",
        );
        write("crates/bad/Cargo.toml", "[package]\nname = \"bad\"\n");
        write("crates/bad/src/lib.rs", "pub fn f() {} \n");
        write("target/debug/junk.rs", "\t\n");
        write("notes.txt", "not checked \n");

        let files = walk(&root);
        assert_eq!(files.len(), 6, "{files:?}");
        let report: Vec<String> = check_tree(&root, &files)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            report,
            [
                "crates/bad/src/lib.rs:1: trailing whitespace",
                "README.md: missing: the root README must exist and list every crate under crates/",
                "crates/bad/README.md: missing",
                "crates/bad/src/lib.rs:1: no crate documentation (`//!`) at the top",
                "crates/bad/src/lib.rs: no `#![deny(missing_docs)]`",
            ]
        );

        let crate_report = |readme: &str| {
            write("README.md", readme);
            let report: Vec<String> = check_tree(&root, &walk(&root))
                .iter()
                .map(ToString::to_string)
                .filter(|finding| finding.starts_with("README.md"))
                .collect();
            report
        };
        assert_eq!(
            crate_report("The crates: `good` and `bad`.\n"),
            ["README.md: no crate table (a table whose first column is `crate`)"]
        );
        let table = "| crate | what |\n|---|---|\n| [`good`](crates/good) | good |\n";
        assert_eq!(
            crate_report(&format!("`bad` is named here, not listed.\n\n{table}")),
            ["README.md: the crate table does not list `bad` (crates/bad)"]
        );
        assert_eq!(
            crate_report(&format!("{table}| `bad` | bad |\n| gone | no more |\n")),
            ["README.md:5: the crate table lists `gone`, which is no crate under crates/"]
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
