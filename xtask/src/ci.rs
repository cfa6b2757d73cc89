//! `cargo xtask ci`: the checks CI runs, in order, stopping at the first failure.

use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use crate::{UsageError, cmd};

/// One CI step: its name (for the log and `--skip`) and what it does.
type Step = (&'static str, fn() -> Result<()>);

/// The steps, in the order they run.
///
/// To add a step, write its `fn` below and add one line here; the header, timing, `--skip` and
/// the summary come with it.
const STEPS: &[Step] = &[
    ("fmt", fmt),
    ("clippy", clippy),
    ("services", services),
    ("test", test),
    ("doc", doc),
    ("package", package),
    ("interop", interop),
    ("conformance", conformance),
];

fn fmt() -> Result<()> {
    cmd::run(&mut cmd::cargo(&["fmt", "--all", "--", "--check"]))
}

/// Every target with every feature, then the libraries with their default features, then those
/// that have default features alone without them, so that code behind a feature that a build
/// lacks is caught too.
fn clippy() -> Result<()> {
    cmd::run(&mut cmd::cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]))?;
    cmd::run(&mut cmd::cargo(&[
        "clippy",
        "--workspace",
        "--lib",
        "--",
        "-D",
        "warnings",
    ]))?;
    for krate in with_default_features()? {
        cmd::run(&mut cmd::cargo(&[
            "clippy",
            "-p",
            &krate,
            "--lib",
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ]))?;
    }
    Ok(())
}

/// The crates under `crates/` whose manifests name default features: each is checked alone
/// without them, where no other crate of the workspace lends it a dependency's feature.
fn with_default_features() -> Result<Vec<String>> {
    let mut crates = Vec::new();
    for entry in std::fs::read_dir(crate::project_root().join("crates"))? {
        let manifest = std::fs::read_to_string(entry?.path().join("Cargo.toml"))?;
        if let Some(name) = defaults_of(&manifest) {
            crates.push(name);
        }
    }
    crates.sort();
    Ok(crates)
}

/// The package's name, if `manifest` gives it default features.
fn defaults_of(manifest: &str) -> Option<String> {
    let defaults = manifest
        .lines()
        .filter_map(|line| line.trim().strip_prefix("default = ["))
        .any(|rest| !rest.trim_start().starts_with(']'));
    let name = manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("name = \""))?
        .trim_end_matches('"');
    defaults.then(|| name.to_owned())
}

/// What the tests run beside the code, from Debian's packages: Redis 7, installed if missing
/// (the Redis backend's tests, and those of several nodes, start `redis-server`s of their own),
/// and Prometheus, unpacked under `.tools/prometheus` (the examples' metrics test starts a
/// `prometheus` that scrapes `echo_server`).
fn services() -> Result<()> {
    crate::redis::ensure()?;
    crate::prometheus::ensure()
}

/// Unit, integration and doc tests of every crate, and the tidy tests of xtask itself.
fn test() -> Result<()> {
    cmd::run(&mut cmd::cargo(&["test", "--workspace", "--all-features"]))
}

fn doc() -> Result<()> {
    let mut command = cmd::cargo(&["doc", "--workspace", "--all-features", "--no-deps"]);
    let (name, value) = deny_rustdoc_warnings(
        std::env::var("CARGO_ENCODED_RUSTDOCFLAGS").ok(),
        std::env::var("RUSTDOCFLAGS").ok(),
    );
    command.env(name, value);
    cmd::run(&mut command)
}

/// `cargo package` of every library crate to publish (the members under `crates/` but those
/// of test support, `publish = false`), each verified by building it from its own tarball, as
/// `cargo publish` would.
///
/// One `cargo package` with every crate: a crate that depends on another of the workspace is
/// verified against a local registry overlay holding the others' fresh tarballs, so nothing
/// has to be on crates.io first and no `--no-verify` is needed. `--allow-dirty` because the
/// check is whether the crates package and build, not whether the tree is committed (a
/// developer runs `cargo xtask ci` before committing; CI's clone is clean anyway).
fn package() -> Result<()> {
    let crates = library_crates()?;
    forget_extracted(&crates)?;
    // Every feature, so that the facade is verified with the crates it re-exports.
    let mut args = vec!["package", "--allow-dirty", "--all-features"];
    for name in &crates {
        args.extend(["-p", name.as_str()]);
    }
    // A tarball's manifest has no workspace profile: without this, its verification builds
    // every dependency again with full debug info (3 GiB more of the CI disk), rather than as
    // the workspace's `[profile.dev]` says, which lets it reuse what `test` built.
    let mut package = cmd::cargo(&args);
    package.env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only");
    cmd::run(&mut package)
}

/// Cargo unpacks each tarball of the verification's local registry overlay once, into
/// `$CARGO_HOME/registry/src/<registry>/NAME-VERSION`, and a later run from the same checkout
/// reuses that directory even when the tarball changed: a crate is then verified against
/// another workspace crate's old sources, and fails to build. Removes our crates' unpacked
/// copies first (a crates.io crate of the same name would just be unpacked again).
fn forget_extracted(crates: &[String]) -> Result<()> {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")));
    let Some(home) = home else {
        return Ok(());
    };
    let Ok(registries) = std::fs::read_dir(home.join("registry").join("src")) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        let Ok(entries) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            if is_unpacked_copy(&entry.file_name().to_string_lossy(), crates) {
                std::fs::remove_dir_all(entry.path())?;
            }
        }
    }
    Ok(())
}

/// Whether `dir` (`NAME-VERSION`) is an unpacked copy of one of `crates`.
fn is_unpacked_copy(dir: &str, crates: &[String]) -> bool {
    crates.iter().any(|name| {
        dir.strip_prefix(name.as_str())
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The names of the library crates to publish: the directories under `crates/` with a
/// manifest that does not say `publish = false`. Those that do are test support, dev-dependencies
/// of the others by path alone, which `cargo package` leaves out of a tarball's manifest.
fn library_crates() -> Result<Vec<String>> {
    let dir = crate::project_root().join("crates");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let Ok(manifest) = std::fs::read_to_string(path.join("Cargo.toml")) else {
            continue;
        };
        if published(&manifest)
            && let Some(name) = path.file_name().and_then(|n| n.to_str())
        {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Whether the package of `manifest` is published: its manifest has no `publish = false`.
fn published(manifest: &str) -> bool {
    !manifest
        .lines()
        .any(|line| line.trim() == "publish = false")
}

/// Our server against the official SDKs' clients (`cargo xtask interop`, every pair).
fn interop() -> Result<()> {
    crate::interop::run(&crate::interop::Options::default())
}

/// The official MCP conformance suite against our server and client (`cargo xtask
/// conformance`, every scenario).
fn conformance() -> Result<()> {
    crate::conformance::run(&crate::conformance::Options::default())
}

/// The rustdoc flags the caller set, with `-D warnings` appended. Cargo reads
/// `CARGO_ENCODED_RUSTDOCFLAGS` (flags separated by `\x1f`) in preference to `RUSTDOCFLAGS`,
/// so the flags go into whichever of the two it will read.
fn deny_rustdoc_warnings(encoded: Option<String>, plain: Option<String>) -> (&'static str, String) {
    match (encoded, plain) {
        (Some(encoded), _) if encoded.is_empty() => {
            ("CARGO_ENCODED_RUSTDOCFLAGS", "-D\x1fwarnings".into())
        }
        (Some(encoded), _) => (
            "CARGO_ENCODED_RUSTDOCFLAGS",
            format!("{encoded}\x1f-D\x1fwarnings"),
        ),
        (None, Some(plain)) if !plain.trim().is_empty() => {
            ("RUSTDOCFLAGS", format!("{plain} -D warnings"))
        }
        (None, _) => ("RUSTDOCFLAGS", "-D warnings".into()),
    }
}

/// The options of `cargo xtask ci`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Options {
    /// Steps not to run, for local work (`--skip clippy --skip doc`).
    skip: Vec<String>,
}

impl Options {
    pub(crate) fn parse(args: &[String]) -> Result<Options, UsageError> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let step = match arg.as_str() {
                "--skip" => args
                    .next()
                    .ok_or_else(|| UsageError::new("--skip needs a step name"))?,
                _ => match arg.strip_prefix("--skip=") {
                    Some(step) => step,
                    None => return Err(UsageError::new(format!("unknown option '{arg}' for ci"))),
                },
            };
            if !STEPS.iter().any(|&(name, _)| name == step) {
                let known: Vec<&str> = STEPS.iter().map(|&(name, _)| name).collect();
                let known = known.join(", ");
                return Err(UsageError::new(format!(
                    "no ci step '{step}' (steps: {known})"
                )));
            }
            options.skip.push(step.to_string());
        }
        Ok(options)
    }
}

pub(crate) fn run(options: &Options) -> Result<()> {
    let mut passed = Vec::new();
    let mut skipped = Vec::new();
    for &(name, step) in STEPS {
        if options.skip.iter().any(|skip| skip == name) {
            eprintln!("xtask: skipping {name}");
            skipped.push(name);
            continue;
        }
        eprintln!("xtask: ==> {name}");
        let start = Instant::now();
        step().map_err(|error| anyhow!("step '{name}' failed ({error:#})"))?;
        passed.push((name, start.elapsed()));
    }
    eprintln!("xtask: {}", summary(&passed, &skipped));
    Ok(())
}

/// `ci passed: fmt (0.4s), clippy (31.0s) in 31.4s; skipped: test, doc`.
fn summary(passed: &[(&str, Duration)], skipped: &[&str]) -> String {
    let steps: Vec<String> = passed
        .iter()
        .map(|(name, elapsed)| format!("{name} ({:.1}s)", elapsed.as_secs_f64()))
        .collect();
    let total: Duration = passed.iter().map(|(_, elapsed)| *elapsed).sum();
    let mut line = format!(
        "ci passed: {} in {:.1}s",
        steps.join(", "),
        total.as_secs_f64()
    );
    if !skipped.is_empty() {
        line.push_str(&format!("; skipped: {}", skipped.join(", ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crate_with_default_features_is_told_from_one_without() {
        let with = "[package]\nname = \"a\"\n[features]\ndefault = [\"serve\"]\n";
        let without = "[package]\nname = \"b\"\n[features]\ndefault = []\n";
        assert_eq!(defaults_of(with).as_deref(), Some("a"));
        assert_eq!(defaults_of(without), None);
        assert_eq!(defaults_of("[package]\nname = \"c\"\n"), None);
    }

    #[test]
    fn only_our_crates_unpacked_copies_are_forgotten() {
        let ours = ["mcp-sse".to_owned(), "mcp-streamable-http".to_owned()];
        assert!(is_unpacked_copy("mcp-sse-0.1.0", &ours));
        assert!(is_unpacked_copy("mcp-streamable-http-0.1.0", &ours));
        assert!(!is_unpacked_copy("mcp-sse-extra-0.1.0", &ours));
        assert!(!is_unpacked_copy("mcp-streamable-http-body-1.0.0", &ours));
        assert!(!is_unpacked_copy("serde-1.0.0", &ours));
    }

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn step_names_are_unique() {
        for (i, &(name, _)) in STEPS.iter().enumerate() {
            assert!(
                STEPS[i + 1..].iter().all(|&(other, _)| other != name),
                "{name}"
            );
        }
    }

    #[test]
    fn skip_is_repeatable_and_checked() {
        let options = Options::parse(&args("--skip clippy --skip=doc")).unwrap();
        assert_eq!(options.skip, ["clippy", "doc"]);
        let error = Options::parse(&args("--skip lint")).unwrap_err();
        assert_eq!(
            error.message,
            "no ci step 'lint' (steps: fmt, clippy, services, test, doc, package, interop, conformance)"
        );
        assert!(Options::parse(&args("--skip")).is_err());
        assert!(Options::parse(&args("--fast")).is_err());
    }

    #[test]
    fn a_crate_of_test_support_is_told_from_one_to_publish() {
        let support = "[package]\nname = \"a\"\nreadme = \"README.md\"\npublish = false\n";
        assert!(!published(support));
        assert!(published("[package]\nname = \"b\"\n"));
        assert!(published(
            "[package]\nname = \"c\"\n# publish = false, once\n"
        ));
    }

    /// Every crate under `crates/` but those of test support is a library to publish:
    /// packaged, with the files and settings crates.io and docs.rs read.
    #[test]
    fn library_crates_carry_what_publishing_needs() {
        let crates = library_crates().unwrap();
        assert!(crates.len() >= 7, "{crates:?}");
        assert!(crates.contains(&"mcp-streamable-http".to_owned()));
        assert!(!crates.contains(&"mcp-test-telemetry".to_owned()));
        let root = crate::project_root().join("crates");
        for name in &crates {
            let dir = root.join(name);
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            for needed in [
                "description = ",
                "license.workspace = true",
                "repository.workspace = true",
                "readme = \"README.md\"",
                "[package.metadata.docs.rs]\nall-features = true",
            ] {
                assert!(manifest.contains(needed), "{name}: no {needed}");
            }
            assert!(!manifest.contains("publish = false"), "{name}");
            for file in ["README.md", "LICENSE-MIT", "LICENSE-APACHE"] {
                assert!(dir.join(file).is_file(), "{name}: no {file}");
            }
        }
    }

    #[test]
    fn summary_lists_steps_with_their_time() {
        let passed = [
            ("fmt", Duration::from_millis(400)),
            ("test", Duration::from_secs(2)),
        ];
        assert_eq!(
            summary(&passed, &[]),
            "ci passed: fmt (0.4s), test (2.0s) in 2.4s"
        );
        assert_eq!(
            summary(&passed[..1], &["clippy"]),
            "ci passed: fmt (0.4s) in 0.4s; skipped: clippy"
        );
    }

    #[test]
    fn rustdoc_warnings_are_denied_on_top_of_the_callers_flags() {
        let deny = deny_rustdoc_warnings;
        assert_eq!(deny(None, None), ("RUSTDOCFLAGS", "-D warnings".into()));
        assert_eq!(
            deny(None, Some("--cfg x".into())),
            ("RUSTDOCFLAGS", "--cfg x -D warnings".into())
        );
        assert_eq!(
            deny(Some("--cfg\x1fx".into()), Some("ignored".into())),
            (
                "CARGO_ENCODED_RUSTDOCFLAGS",
                "--cfg\x1fx\x1f-D\x1fwarnings".into()
            )
        );
    }
}
