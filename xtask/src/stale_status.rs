//! A tidy test that keeps the READMEs and the crate docs from saying that something is still to
//! come once it exists: a clause that says something is not done ("planned", "the next step",
//! "not yet", "separate work"...) must name nothing the tree has, that is no crate, no Cargo
//! feature, no file and no function. The README once said that sharing sessions through Redis
//! was "the next step", and authorization "separate work", while the `mcp-streamable-redis`
//! and `mcp-streamable-oauth` crates and the `redis` and `oauth` features existed: each of
//! those clauses names a feature, so each is found.
//!
//! Crate and feature names count in prose, whatever their case ("Redis", "OAuth"); features
//! whose names are ordinary words of these docs ("server", "client") count only in a code span.
//! Files and functions count in code spans. A clause runs to a full stop or a semicolon; a list
//! item or a table row is one on its own, so that a status table's row (`| Redis | planned |`)
//! is read whole.
//!
//! The check cannot tell "X is not yet done" from "X, which exists, does not yet do Y": the
//! second is flagged too when it names X. Such a limitation is better said as what the code does
//! today ("the client speaks HTTP/1.1 and HTTP/2"), which does not go stale when Y comes; a
//! promise about the future does.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use crate::spec_refs::functions;
use crate::tidy::{crate_dirs, mentions, package_name, source_files};

/// The phrases that say something is not done, matched as whole words in any case.
const MARKERS: &[&str] = &[
    "planned",
    "next step",
    "not yet",
    "separate work",
    "still to do",
    "left to do",
    "todo",
    "future work",
    "later work",
    "yet to be",
    "coming soon",
    "not implemented",
];

/// Features whose names are ordinary words of these docs: they count only in a code span, or
/// every clause about a client would name the facade's `client` feature.
const ORDINARY_FEATURES: &[&str] = &["server", "client", "full", "serve", "testing"];

/// What the tree has, that a clause saying "not done" may not name.
#[derive(Debug, Default)]
struct Tree {
    /// The packages under `crates/`.
    crates: Vec<String>,
    /// Each Cargo feature of those crates (but `default`) and its crate.
    features: Vec<(String, String)>,
    /// The files git knows, `/`-separated and relative to the root.
    files: Vec<String>,
    /// Every function name declared in the tree's `.rs` files.
    functions: HashSet<String>,
}

/// A clause that says something is not done and names what exists.
#[derive(Debug, PartialEq, Eq)]
struct Stale {
    line: usize,
    marker: &'static str,
    named: String,
}

#[test]
fn no_readme_or_crate_doc_says_not_done_of_what_exists() {
    let root = crate::project_root();
    let tree = Tree::read(&root);
    assert!(tree.crates.len() > 5, "found only {:?}", tree.crates);
    assert!(tree.features.iter().any(|(feature, _)| feature == "redis"));
    for ordinary in ORDINARY_FEATURES {
        assert!(
            tree.features.iter().any(|(feature, _)| feature == ordinary),
            "ORDINARY_FEATURES names `{ordinary}`, which is no feature any more"
        );
    }
    let documents = documents(&root, &tree.files);
    assert!(
        documents.len() > 10,
        "found only {} documents",
        documents.len()
    );
    let mut found = Vec::new();
    for (path, lines) in &documents {
        for stale in check(lines, &tree) {
            found.push(format!(
                "  {path}:{}: says not done (\"{}\") but names {}",
                stale.line, stale.marker, stale.named
            ));
        }
    }
    assert!(
        found.is_empty(),
        "stale status lines:\n{}\nsay what the code does now",
        found.join("\n")
    );
}

impl Tree {
    fn read(root: &Path) -> Tree {
        let mut tree = Tree {
            files: source_files(root),
            ..Tree::default()
        };
        for dir in crate_dirs(root) {
            let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
            let Some(package) = package_name(&manifest) else {
                continue;
            };
            for feature in features(&manifest) {
                tree.features.push((feature, package.clone()));
            }
            tree.crates.push(package);
        }
        let rust: Vec<String> = tree
            .files
            .iter()
            .filter(|file| file.ends_with(".rs"))
            .cloned()
            .collect();
        tree.functions = functions(root, &rust);
        tree
    }

    /// The first thing of the tree `clause` names, said for the report.
    fn named_in(&self, clause: &str) -> Option<String> {
        let lower = clause.to_lowercase();
        let spans: Vec<&str> = clause.split('`').skip(1).step_by(2).collect();
        for name in &self.crates {
            if mentions(&lower, name) || mentions(&lower, &name.replace('-', "_")) {
                return Some(format!("the crate `{name}`"));
            }
        }
        for (feature, package) in &self.features {
            let named = if ORDINARY_FEATURES.contains(&feature.as_str()) {
                spans.contains(&feature.as_str())
            } else {
                mentions(&lower, feature)
            };
            if named {
                return Some(format!("the feature `{feature}` of `{package}`"));
            }
        }
        for span in spans {
            if self.has_file(span) {
                return Some(format!("the file `{span}`"));
            }
            if span.contains('_') && self.functions.contains(span) {
                return Some(format!("the function `{span}`"));
            }
        }
        None
    }

    /// Whether `span` is the path of a file or folder of the tree, from the root or from any
    /// folder (as crate docs cite `src/...`).
    fn has_file(&self, span: &str) -> bool {
        let path_like = span.contains('/') || span.ends_with(".rs");
        let plain = span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'));
        if !path_like || !plain || span.starts_with('/') {
            return false;
        }
        let span = span.trim_end_matches('/');
        self.files.iter().any(|file| {
            let at = file.match_indices(span).map(|(at, _)| at);
            at.into_iter().any(|at| {
                let before = at == 0 || file[..at].ends_with('/');
                let after = &file[at + span.len()..];
                before && (after.is_empty() || after.starts_with('/'))
            })
        })
    }
}

/// The feature names of a `Cargo.toml`'s `[features]` section, `default` left out.
fn features(manifest: &str) -> Vec<String> {
    let mut in_features = false;
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') && !line.starts_with("[\"") {
            in_features = line == "[features]";
            continue;
        }
        let Some((key, _)) = line.split_once('=').filter(|_| in_features) else {
            continue;
        };
        let key = key.trim();
        let is_name = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if is_name && key != "default" {
            found.push(key.to_string());
        }
    }
    found
}

/// The documents checked, each as its numbered lines of Markdown: every README git knows, and
/// the crate docs (the `//!` lines) of each crate's `lib.rs`.
fn documents(root: &Path, files: &[String]) -> Vec<(String, Vec<(usize, String)>)> {
    let mut documents = Vec::new();
    for file in files {
        let is_readme = file == "README.md" || file.ends_with("/README.md");
        let is_lib = file.starts_with("crates/") && file.ends_with("/src/lib.rs");
        if !is_readme && !is_lib {
            continue;
        }
        let Ok(text) = fs::read_to_string(root.join(file)) else {
            continue;
        };
        let lines = (1..).zip(text.lines()).filter_map(|(number, line)| {
            if is_readme {
                return Some((number, line.to_string()));
            }
            let doc = line.trim_start().strip_prefix("//!")?;
            Some((number, doc.strip_prefix(' ').unwrap_or(doc).to_string()))
        });
        documents.push((file.clone(), lines.collect()));
    }
    documents
}

/// The clauses of `lines` that say something is not done and name what `tree` has.
fn check(lines: &[(usize, String)], tree: &Tree) -> Vec<Stale> {
    let mut found = Vec::new();
    for paragraph in paragraphs(lines) {
        let (text, starts) = join(&paragraph);
        for (start, end) in clauses(&text) {
            let clause = &text[start..end];
            let lower = clause.to_lowercase();
            let Some(marker) = MARKERS.iter().find(|marker| mentions(&lower, marker)) else {
                continue;
            };
            if let Some(named) = tree.named_in(clause) {
                let at = start + lower.find(marker).unwrap_or(0);
                let line = starts
                    .iter()
                    .rev()
                    .find(|(offset, _)| *offset <= at)
                    .map_or(0, |(_, line)| *line);
                found.push(Stale {
                    line,
                    marker,
                    named,
                });
            }
        }
    }
    found
}

/// The paragraphs of Markdown `lines`, code blocks left out: a blank line, a heading, a list
/// item or a table row starts a new one.
fn paragraphs(lines: &[(usize, String)]) -> Vec<Vec<(usize, &str)>> {
    let mut paragraphs: Vec<Vec<(usize, &str)>> = Vec::new();
    let mut current = Vec::new();
    let mut in_code = false;
    for (number, line) in lines {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            paragraphs.extend((!current.is_empty()).then(|| std::mem::take(&mut current)));
            continue;
        }
        if in_code {
            continue;
        }
        let opens = trimmed.is_empty()
            || trimmed.starts_with('#')
            || trimmed.starts_with('|')
            || trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        if opens && !current.is_empty() {
            paragraphs.push(std::mem::take(&mut current));
        }
        if !trimmed.is_empty() {
            current.push((*number, trimmed));
        }
    }
    paragraphs.extend((!current.is_empty()).then_some(current));
    paragraphs
}

/// A paragraph's lines joined by spaces, and where each line starts in the text.
fn join(paragraph: &[(usize, &str)]) -> (String, Vec<(usize, usize)>) {
    let mut text = String::new();
    let mut starts = Vec::new();
    for (number, line) in paragraph {
        if !text.is_empty() {
            text.push(' ');
        }
        starts.push((text.len(), *number));
        text.push_str(line);
    }
    (text, starts)
}

/// The clauses of `text` as byte ranges: each ends at a full stop or semicolon followed by a
/// space, or at the end.
fn clauses(text: &str) -> Vec<(usize, usize)> {
    let mut clauses = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (at, &byte) in bytes.iter().enumerate() {
        let ends =
            matches!(byte, b'.' | b';') && bytes.get(at + 1).is_none_or(|next| *next == b' ');
        if ends {
            clauses.push((start, at));
            start = at + 1;
        }
    }
    clauses.push((start, text.len()));
    clauses.retain(|(start, end)| start < end);
    clauses
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree with the Redis and OAuth crates and features, a file and a test.
    fn tree() -> Tree {
        let features = [
            ("redis", "mcp-streamable-http"),
            ("oauth", "mcp-streamable-http"),
            ("client", "mcp-streamable-http"),
        ];
        Tree {
            crates: ["mcp-sse", "mcp-streamable-redis", "mcp-streamable-oauth"]
                .map(String::from)
                .to_vec(),
            features: features
                .map(|(feature, package)| (feature.to_string(), package.to_string()))
                .to_vec(),
            files: ["crates/mcp-sse/src/scan.rs", "examples/rmcp_axum.rs"]
                .map(String::from)
                .to_vec(),
            functions: ["e4_the_bound_holds".to_string(), "new".to_string()].into(),
        }
    }

    fn lines(text: &str) -> Vec<(usize, String)> {
        (1..).zip(text.lines().map(String::from)).collect()
    }

    fn stale(text: &str, tree: &Tree) -> Vec<String> {
        check(&lines(text), tree)
            .iter()
            .map(|s| format!("{}: {} / {}", s.line, s.marker, s.named))
            .collect()
    }

    /// The two lines issue 31 found, as the README had them.
    const OLD_STATUS: &str = "\
**Status:** the JSON-RPC, SSE and transport layers exist. The server's session core sits
under its HTTP edge with store seams (`EventStore`, `SessionStore`) for sessions shared by
several processes; sharing them through Redis is the next step.

Its token check is a static shared secret, enough for a private deployment; real authorization
(OAuth 2.1 with protected resource metadata) is separate work.
";

    #[test]
    fn the_stale_lines_of_the_old_status_are_found() {
        assert_eq!(
            stale(OLD_STATUS, &tree()),
            [
                "3: next step / the feature `redis` of `mcp-streamable-http`",
                "6: separate work / the feature `oauth` of `mcp-streamable-http`",
            ]
        );
        // Before those crates and features existed, the same lines were true.
        let before = Tree {
            crates: vec!["mcp-sse".into()],
            features: vec![("client".into(), "mcp-streamable-http".into())],
            ..tree()
        };
        assert!(stale(OLD_STATUS, &before).is_empty());
    }

    #[test]
    fn a_clause_is_stale_only_with_a_marker_and_a_name() {
        let tree = tree();
        // A marker, nothing of the tree: true.
        assert!(stale("HTTP/3 is planned. The client is done.\n", &tree).is_empty());
        // A name, no marker: true.
        assert!(stale("Redis keeps the sessions.\n", &tree).is_empty());
        // The marker and the name in different clauses: true.
        assert!(stale("Redis keeps them; QUIC is not yet here.\n", &tree).is_empty());
        let found = [
            (
                "The `redis` feature is still to do.\n",
                "still to do / the feature `redis`",
            ),
            (
                "Sharding (`mcp-sse`) is TODO.\n",
                "todo / the crate `mcp-sse`",
            ),
            (
                "`examples/rmcp_axum.rs` is planned.\n",
                "planned / the file `examples/rmcp_axum.rs`",
            ),
            (
                "`src/scan.rs` is not yet written.\n",
                "not yet / the file `src/scan.rs`",
            ),
            (
                "`e4_the_bound_holds` is planned.\n",
                "planned / the function `e4_the_bound_holds`",
            ),
            (
                "A `client` feature is planned.\n",
                "planned / the feature `client`",
            ),
        ];
        for (text, expected) in found {
            let stale = stale(text, &tree);
            assert_eq!(stale.len(), 1, "{text}");
            assert!(stale[0].contains(expected), "{stale:?}");
        }
        // An ordinary word is a feature's name only in a code span; a function is one only when
        // its name is not an ordinary word either.
        assert!(stale("A client for HTTP/3 is planned.\n", &tree).is_empty());
        assert!(stale("A `new` constructor is planned.\n", &tree).is_empty());
        // Part of a path or a word is not a name.
        assert!(
            stale(
                "`rmcp_axum.rs.bak` and redis-like stores are planned.\n",
                &tree
            )
            .is_empty()
        );
    }

    #[test]
    fn code_blocks_are_skipped_and_rows_and_items_read_whole() {
        let text = "\
```rust
// Redis support is planned.
```
| feature | status |
|---|---|
| QUIC | planned |
| Redis | planned |
- OAuth
- not yet: HTTP/3
- OAuth for machines:
  not yet
";
        assert_eq!(
            stale(text, &tree()),
            [
                "7: planned / the feature `redis` of `mcp-streamable-http`",
                "11: not yet / the feature `oauth` of `mcp-streamable-http`",
            ]
        );
    }

    #[test]
    fn clauses_end_at_stops_and_semicolons() {
        let text = "OAuth 2.1 exists; e.g. here. Next | cell.";
        let clauses: Vec<&str> = clauses(text).iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(
            clauses,
            ["OAuth 2.1 exists", " e.g", " here", " Next | cell"]
        );
    }

    #[test]
    fn features_are_read_from_their_section() {
        let manifest = "[package]\nname = \"x\"\n[features]\ndefault = [\"a\"]\n## A doc.\na = []\n\
                        b-c = [\n    \"dep:y\",\n]\n[dependencies]\nz = \"1\"\n";
        assert_eq!(features(manifest), ["a", "b-c"]);
    }

    #[test]
    fn crate_docs_are_their_doc_lines() {
        let root = std::env::temp_dir().join(format!("xtask-stale-{}", std::process::id()));
        fs::create_dir_all(root.join("crates/a/src")).unwrap();
        fs::write(
            root.join("crates/a/src/lib.rs"),
            "//! Docs.\n//!\n//!  Two.\nfn f() {}\n",
        )
        .unwrap();
        fs::write(root.join("README.md"), "# R\n").unwrap();
        let files = ["README.md", "crates/a/src/lib.rs", "crates/a/src/other.rs"].map(String::from);
        let docs = documents(&root, &files);
        assert_eq!(docs[0], ("README.md".into(), vec![(1, "# R".into())]));
        assert_eq!(
            docs[1],
            (
                "crates/a/src/lib.rs".into(),
                vec![(1, "Docs.".into()), (2, String::new()), (3, " Two.".into())]
            )
        );
        assert_eq!(docs.len(), 2);
        fs::remove_dir_all(root).unwrap();
    }
}
