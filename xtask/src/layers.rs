//! Tidy tests of the import structure inside a crate. A crate whose docs list its modules in
//! layers (a `# How it is built` section of `lib.rs` whose numbered items, top to bottom, each
//! name the backquoted top-level modules of one layer) is held to that list: a module imports
//! from its own layer and those below, never from one above, and no files import each other
//! but the pairs listed, each with its reason, in [`ALLOWED_PAIRS`]. Every crate with more
//! than [`LAYERED_FROM_FILES`] files is held to it.
//!
//! An import is any `crate::` or `super::` path in a file's code (comments and test modules
//! aside), `use` or not, resolved to the file of the longest module prefix it names.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The pairs of files that import each other, by crate (its folder under `crates/`), each with
/// the reason: any other circle fails, and so does a pair listed here that no longer is one.
const ALLOWED_PAIRS: &[(&str, &str, &str, &str)] = &[
    (
        "mcp-streamable-auth",
        "guard.rs",
        "layer.rs",
        "the guard hands out its tower layer (`Guard::layer`), and the layer asks the guard",
    ),
    (
        "mcp-streamable-server",
        "core/session/mod.rs",
        "core/shared.rs",
        "a session keeps what the service's sessions share (`Shared`: the config, the clock, \
         the budget), which keeps the sessions, to find them by id and reap the idle",
    ),
    (
        "mcp-streamable-server",
        "core/store/event_store/memory.rs",
        "core/store/event_store/mod.rs",
        "the seam's module names its in-memory store, which implements the seam's trait",
    ),
    (
        "mcp-streamable-server",
        "core/rate_limit/memory.rs",
        "core/rate_limit/mod.rs",
        "the seam's module names its in-memory store, which implements the seam's trait",
    ),
];

/// Whether the files `a` and `b` (sorted) of the crate at `src` may import each other.
fn allowed(src: &str, a: &str, b: &str) -> bool {
    ALLOWED_PAIRS
        .iter()
        .any(|(krate, x, y, _)| src == format!("crates/{krate}/src") && (*x, *y) == (a, b))
}

/// A crate has its layers listed once it has more files than this.
const LAYERED_FROM_FILES: usize = 8;

/// Libraries outside `crates/` that list their layers too, by the folder of their `lib.rs`:
/// the load benchmark's.
const LAYERED_ELSEWHERE: &[&str] = &["benches/load"];

/// The crates that must list their layers: every one under `crates/` with more than
/// [`LAYERED_FROM_FILES`] files in `src`, and those of [`LAYERED_ELSEWHERE`].
fn layered(root: &Path) -> Vec<String> {
    let mut crates: Vec<String> = fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| format!("crates/{}/src", entry.file_name().to_string_lossy()))
        .filter(|src| {
            let mut sources = Vec::new();
            collect(&root.join(src), &root.join(src), &mut sources);
            sources.len() > LAYERED_FROM_FILES
        })
        .collect();
    crates.extend(LAYERED_ELSEWHERE.iter().map(|src| (*src).to_owned()));
    crates.sort();
    crates
}

#[test]
fn layers_are_imported_one_way_and_circles_are_small() {
    let root = crate::project_root();
    let mut problems = Vec::new();
    let crates = layered(&root);
    for required in [
        "crates/mcp-streamable-server/src",
        "crates/mcp-streamable-client/src",
        "benches/load",
    ] {
        assert!(
            crates.iter().any(|c| c == required),
            "{required} not found: {crates:?}"
        );
    }
    let mut pairs = BTreeSet::new();
    for src in &crates {
        let lib = fs::read_to_string(root.join(src).join("lib.rs")).unwrap_or_default();
        let layers = documented_layers(&lib);
        if layers.len() < 2 {
            problems.push(format!(
                "{src}/lib.rs: no layers listed under `# How it is built`"
            ));
            continue;
        }
        let graph = Graph::read(&root.join(src));
        let violations = graph.layer_violations(&layers).into_iter();
        problems.extend(violations.map(|p| format!("{src}/{p}")));
        for circle in graph.circles() {
            match circle.as_slice() {
                [a, b] if allowed(src, a, b) => {
                    pairs.insert((src.clone(), a.clone(), b.clone()));
                }
                _ => problems.push(format!(
                    "{src}: an import circle of {} files not listed in layers::ALLOWED_PAIRS: {}",
                    circle.len(),
                    circle.join(", ")
                )),
            }
        }
    }
    for (src, a, b, _) in ALLOWED_PAIRS {
        let pair = (format!("crates/{src}/src"), a.to_string(), b.to_string());
        if !pairs.contains(&pair) {
            problems.push(format!(
                "layers::ALLOWED_PAIRS lists {src}: {a}, {b}, which no longer import each other"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "import structure:\n  {}",
        problems.join("\n  ")
    );
}

/// The layers a crate's docs list, bottom up: the numbered items of `# How it is built`, top
/// to bottom, each the backquoted names before its colon.
fn documented_layers(lib: &str) -> Vec<Vec<String>> {
    let mut in_section = false;
    let mut layers = Vec::new();
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if let Some(heading) = doc.strip_prefix('#') {
            in_section = heading.trim_start_matches('#').trim() == "How it is built";
            continue;
        }
        let Some((number, rest)) = doc.split_once(". ") else {
            continue;
        };
        if !in_section || number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let names = rest.split(':').next().unwrap_or("");
        let layer: Vec<String> = names
            .split(',')
            .filter_map(|n| n.trim().strip_prefix('`')?.strip_suffix('`'))
            .map(String::from)
            .collect();
        if !layer.is_empty() {
            layers.push(layer);
        }
    }
    layers.reverse();
    layers
}

/// The files of a crate and the files each imports, by module path (`core::session`; the
/// crate root is ``).
#[derive(Debug, Default)]
struct Graph {
    /// Module path to its file, relative to the source folder.
    files: BTreeMap<String, String>,
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn read(src: &Path) -> Graph {
        let mut sources = Vec::new();
        collect(src, src, &mut sources);
        Graph::from_sources(&sources)
    }

    /// From `(path relative to the source folder, text)` pairs.
    fn from_sources(sources: &[(String, String)]) -> Graph {
        let mut graph = Graph::default();
        for (path, _) in sources {
            graph.files.insert(module_of(path), path.clone());
        }
        for (path, text) in sources {
            let from = module_of(path);
            let mut to = BTreeSet::new();
            for target in imports(&from, text) {
                if let Some(module) = graph.resolve(&target)
                    && module != from
                {
                    to.insert(module);
                }
            }
            graph.edges.insert(from, to);
        }
        graph
    }

    /// The longest prefix of `path` that is a module with a file.
    fn resolve(&self, path: &[String]) -> Option<String> {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].join("::"))
            .find(|module| self.files.contains_key(module))
    }

    /// Imports of a module from a layer above its own; `layers` bottom up.
    fn layer_violations(&self, layers: &[Vec<String>]) -> Vec<String> {
        let layer = |module: &str| {
            let top = module.split("::").next().unwrap_or("");
            layers.iter().position(|l| l.iter().any(|name| name == top))
        };
        let name = |i: usize| layers[i].join(", ");
        let mut problems = Vec::new();
        for (from, targets) in &self.edges {
            let Some(low) = layer(from) else { continue };
            for to in targets {
                if let Some(high) = layer(to)
                    && high > low
                {
                    problems.push(format!(
                        "{}: the {} layer imports {} of the {} layer above it",
                        self.files[from],
                        name(low),
                        self.files[to],
                        name(high)
                    ));
                }
            }
        }
        problems
    }

    /// Every strongly connected set of files larger than `max`.
    /// Every import circle, as the files in it, sorted.
    fn circles(&self) -> Vec<Vec<String>> {
        strongly_connected(&self.edges)
            .into_iter()
            .filter(|set| set.len() > 1)
            .map(|set| {
                let mut files: Vec<String> = set.iter().map(|m| self.files[m].clone()).collect();
                files.sort();
                files
            })
            .collect()
    }
}

fn collect(dir: &Path, src: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, src, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && let (Ok(rel), Ok(text)) = (path.strip_prefix(src), fs::read_to_string(&path))
        {
            out.push((rel.to_string_lossy().replace('\\', "/"), text));
        }
    }
}

/// `core/session.rs` -> `core::session`; `core/mod.rs` -> `core`; `lib.rs` -> ``.
fn module_of(path: &str) -> String {
    let path = path.strip_suffix(".rs").unwrap_or(path);
    let path = path.strip_suffix("/mod").unwrap_or(path);
    if path == "lib" || path == "main" {
        return String::new();
    }
    path.replace('/', "::")
}

/// The module paths a file names: `crate::` paths, `super::` paths resolved, and, in a file
/// with submodules, paths that start with one of them.
fn imports(module: &str, text: &str) -> Vec<Vec<String>> {
    let here: Vec<String> = module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let code = code_of(text);
    let children = child_modules(&code);
    let mut out = Vec::new();
    for (prefix, rest) in path_starts(&code, &children) {
        let base: Vec<String> = match prefix.as_str() {
            "crate" => Vec::new(),
            // The parent module, whether the file is `x.rs` or `x/mod.rs`.
            "super" => {
                let mut base = here.clone();
                base.pop();
                base
            }
            child => {
                let mut base = here.clone();
                base.push(child.to_owned());
                base
            }
        };
        for tail in expand(rest) {
            let mut full = base.clone();
            full.extend(tail);
            out.push(full);
        }
    }
    out
}

/// The text without comments and without the test modules at its end.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push_str(line.split(" //").next().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// The submodules a file declares (`mod name;`).
fn child_modules(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line
                .strip_prefix("pub(crate) ")
                .or(line.strip_prefix("pub "))
                .unwrap_or(line);
            line.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(|name| name.trim().to_owned())
        })
        .collect()
}

/// Every `crate::`, `super::` or `<child>::` at the start of a path, with what follows it.
fn path_starts<'a>(code: &'a str, children: &BTreeSet<String>) -> Vec<(String, &'a str)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while let Some(at) = code[i..].find("::") {
        let end = i + at;
        let start = code[..end]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |p| p + 1);
        let word = &code[start..end];
        let preceded_by_path = start >= 2 && &bytes[start - 2..start] == b"::";
        if !preceded_by_path && (word == "crate" || word == "super" || children.contains(word)) {
            out.push((word.to_owned(), &code[end + 2..]));
        }
        i = end + 2;
    }
    out
}

/// The paths of one use tree at the start of `rest`: `a::b::C`, or `a::{b, c::{D, E}}`.
fn expand(rest: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut s = rest.trim_start();
    loop {
        if let Some(inner) = s.strip_prefix('{') {
            let body = &inner[..matching_brace(inner)];
            let mut out = Vec::new();
            for part in split_top(body) {
                for tail in expand(part) {
                    let mut full = segments.clone();
                    full.extend(tail);
                    out.push(full);
                }
            }
            return out;
        }
        let len = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        if len == 0 {
            break;
        }
        segments.push(s[..len].to_owned());
        match s[len..].strip_prefix("::") {
            Some(next) => s = next.trim_start(),
            None => break,
        }
    }
    vec![segments]
}

/// The index of the `}` closing a brace whose inside starts `s`.
fn matching_brace(s: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

/// Splits a use list at its top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Tarjan's strongly connected components, each as a set of nodes.
fn strongly_connected(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut set = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    set.insert(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                self.out.push(set);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> Graph {
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect();
        Graph::from_sources(&sources)
    }

    #[test]
    fn use_trees_expand_to_every_path() {
        assert_eq!(expand("a::b::C;"), vec![vec!["a", "b", "C"]]);
        assert_eq!(
            expand("a::{b, c::{D, E}, F};"),
            vec![
                vec!["a", "b"],
                vec!["a", "c", "D"],
                vec!["a", "c", "E"],
                vec!["a", "F"]
            ]
        );
    }

    #[test]
    fn imports_resolve_to_files_and_skip_comments_and_tests() {
        let g = graph(&[
            ("lib.rs", "mod core;\nmod http;\n"),
            (
                "core/mod.rs",
                "pub(crate) mod session;\npub(crate) use session::Session;\n",
            ),
            (
                "core/session.rs",
                "// see crate::http::post\nuse super::Thing;\n",
            ),
            (
                "http/post.rs",
                "use crate::core::{Session, session::Ending};\nfn f() { crate::http::reply::x(); }\n#[cfg(test)]\nmod tests { use crate::http::get; }\n",
            ),
            ("http/reply.rs", ""),
            ("http/get.rs", ""),
            ("store/mod.rs", "use super::core::Session;\n"),
        ]);
        let edges = |m: &str| g.edges[m].iter().cloned().collect::<Vec<_>>();
        assert_eq!(
            edges("http::post"),
            ["core", "core::session", "http::reply"]
        );
        assert_eq!(edges("core::session"), ["core"]);
        assert_eq!(edges("core"), ["core::session"]);
        // In a `mod.rs`, `super` is the parent module, as in any other file.
        assert_eq!(edges("store"), ["core"]);
    }

    #[test]
    fn a_lower_layer_may_not_import_a_higher_one() {
        let g = graph(&[
            (
                "core/a.rs",
                "use crate::http::b::X;\nuse crate::protocol::c::Y;\n",
            ),
            ("http/b.rs", "use crate::core::a::Z;\n"),
            ("protocol/c.rs", ""),
        ]);
        let layers = [
            vec!["protocol".into()],
            vec!["core".into()],
            vec!["http".into()],
        ];
        let problems = g.layer_violations(&layers);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("core/a.rs: the core layer imports http/b.rs"));
    }

    #[test]
    fn layers_are_read_from_the_crate_docs_bottom_up() {
        let lib = "//! Intro.\n//!\n//! # How it is built\n//!\n//! 1. `client`, `connection`: the face.\n//!    more words: `ignored`.\n//! 2. `wire`: the HTTP layer.\n//!\n//! # Other\n//! 3. `not`: a layer.\n";
        assert_eq!(
            documented_layers(lib),
            [
                vec!["wire".to_owned()],
                vec!["client".to_owned(), "connection".to_owned()]
            ]
        );
        assert!(documented_layers("//! No section.\n").is_empty());
    }

    #[test]
    fn circles_are_found_and_only_listed_pairs_allowed() {
        let g = graph(&[
            ("a.rs", "use crate::b::X;\n"),
            ("b.rs", "use crate::c::X;\n"),
            ("c.rs", "use crate::a::X;\n"),
            ("d.rs", "use crate::e::X;\n"),
            ("e.rs", "use crate::d::X;\n"),
        ]);
        let circles = g.circles();
        assert_eq!(
            circles,
            [vec!["a.rs", "b.rs", "c.rs"], vec!["d.rs", "e.rs"]]
        );
        let server = "crates/mcp-streamable-server/src";
        assert!(allowed(server, "core/session/mod.rs", "core/shared.rs"));
        assert!(
            !allowed(server, "core/shared.rs", "core/session/mod.rs"),
            "sorted only"
        );
        assert!(!allowed(
            "crates/mcp-streamable-client/src",
            "core/session/mod.rs",
            "core/shared.rs"
        ));
        assert!(!allowed(server, "d.rs", "e.rs"));
    }
}
