//! The layering of `mcp-streamable-client`: its crate docs list its modules in layers, top to
//! bottom (`# How it is built`); this tidy test holds the code to that list. A module imports
//! from its own layer and the ones below it, never from one above, and the `use crate::...`
//! imports between its files form no circle.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The crate whose layers are checked, relative to the workspace root.
const CLIENT_SRC: &str = "crates/mcp-streamable-client/src";

#[test]
fn client_modules_import_down_and_in_no_circle() {
    let src = crate::project_root().join(CLIENT_SRC);
    let files = read_tree(&src);
    let lib = files.get("lib.rs").expect("the client has a lib.rs");
    let layers = layers(lib);
    assert!(
        layers.len() > 3,
        "no layers listed in the client's crate docs"
    );
    let problems = check(&layers, &files);
    assert!(problems.is_empty(), "layering: {problems:#?}");
}

/// The `.rs` files under `dir`, by `/`-separated path relative to it.
fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    fn visit(root: &Path, dir: &Path, files: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                visit(root, &path, files);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                let rel = rel.replace('\\', "/");
                files.insert(rel, fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    visit(dir, dir, &mut files);
    files
}

/// The layers the crate docs list: the numbered items of `# How it is built`, each the
/// backquoted module names before its colon.
fn layers(lib: &str) -> Vec<Vec<String>> {
    let mut in_section = false;
    let mut layers = Vec::new();
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with('#') {
            in_section = doc == "# How it is built";
            continue;
        }
        let Some((number, rest)) = doc.split_once(". ") else {
            continue;
        };
        if !in_section || number.parse::<u32>().is_err() {
            continue;
        }
        let names = rest.split(':').next().unwrap_or("");
        let modules = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        layers.push(modules);
    }
    layers
}

/// The module a file belongs to: its first path segment (`lane/session.rs` is in `lane`).
fn module_of(file: &str) -> &str {
    let first = file.split('/').next().unwrap_or(file);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// The files a file imports from with `crate::` paths, outside comments and its tests.
fn imports(text: &str, files: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        for (i, _) in code.match_indices("crate::") {
            let path: Vec<&str> = code[i + "crate::".len()..]
                .split("::")
                .map(|seg| seg.split(|c: char| !c.is_ascii_alphanumeric() && c != '_'))
                .map(|mut seg| seg.next().unwrap_or(""))
                .take_while(|seg| seg.starts_with(|c: char| c.is_ascii_lowercase()))
                .collect();
            if let Some(file) = resolve(&path, files) {
                found.insert(file);
            }
        }
    }
    found
}

/// The file that defines the longest prefix of `path` that is a module.
fn resolve(path: &[&str], files: &BTreeMap<String, String>) -> Option<String> {
    (1..=path.len()).rev().find_map(|n| {
        let stem = path[..n].join("/");
        [format!("{stem}.rs"), format!("{stem}/mod.rs")]
            .into_iter()
            .find(|file| files.contains_key(file))
    })
}

/// Every import that goes up a layer, every module no layer lists, and every circle.
fn check(layers: &[Vec<String>], files: &BTreeMap<String, String>) -> Vec<String> {
    let layer_of = |module: &str| layers.iter().position(|l| l.iter().any(|m| m == module));
    let mut problems = Vec::new();
    let mut graph = BTreeMap::new();
    for (file, text) in files.iter().filter(|(file, _)| *file != "lib.rs") {
        let Some(layer) = layer_of(module_of(file)) else {
            problems.push(format!("{file}: module in no layer of the crate docs"));
            continue;
        };
        let targets = imports(text, files);
        for target in &targets {
            match layer_of(module_of(target)) {
                Some(to) if to < layer => problems.push(format!("{file} imports {target}, above")),
                None if target == "lib.rs" => problems.push(format!("{file} imports lib.rs")),
                _ => {}
            }
        }
        graph.insert(file.clone(), targets);
    }
    problems.extend(circles(&graph));
    problems
}

/// The circles of the import graph, one per file that starts one, by depth-first search.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        file: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        if let Some(start) = path.iter().position(|f| f == file) {
            found.push(format!("circle: {} -> {file}", path[start..].join(" -> ")));
            return;
        }
        if !done.insert(file.to_owned()) {
            return;
        }
        path.push(file.to_owned());
        for next in graph.get(file).into_iter().flatten() {
            visit(next, graph, path, done, found);
        }
        path.pop();
    }
    let (mut done, mut found) = (BTreeSet::new(), Vec::new());
    for file in graph.keys() {
        visit(file, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect()
    }

    const LIB: &str = "//! # How it is built\n//!\n//! 1. `top`: the face.\n//! 2. `mid`, \
                       `low`: below.\n//!\n//! # Features\n//! 3. `not`: a list elsewhere.\n";

    #[test]
    fn layers_are_read_from_the_crate_docs() {
        assert_eq!(layers(LIB), vec![vec!["top"], vec!["mid", "low"]]);
    }

    #[test]
    fn imports_up_unlisted_modules_and_circles_are_found() {
        let files = tree(&[
            ("lib.rs", LIB),
            (
                "top.rs",
                "use crate::mid::Thing;\n// crate::stray in a comment\n",
            ),
            (
                "mid/mod.rs",
                "use crate::low::x;\nuse crate::mid::deep::y;\n",
            ),
            ("mid/deep.rs", "use crate::top::T;\n"),
            (
                "low.rs",
                "use crate::mid::Z;\n#[cfg(test)]\nuse crate::top::U;\n",
            ),
            ("odd.rs", ""),
        ]);
        let problems = check(&layers(LIB), &files);
        assert!(problems.contains(&"mid/deep.rs imports top.rs, above".to_owned()));
        assert!(problems.contains(&"odd.rs: module in no layer of the crate docs".to_owned()));
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("circle: ") && p.contains("low.rs")),
            "{problems:#?}"
        );
        assert!(
            !problems.iter().any(|p| p.starts_with("top.rs")),
            "{problems:#?}"
        );
    }
}
