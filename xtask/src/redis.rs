//! Redis 7 for the tests of `mcp-streamable-redis`, which start `redis-server`s of their own:
//! found on `PATH`, or installed from Debian's packages when missing.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::cmd;

/// The oldest Redis the backend's scripts and tests are written for.
const MIN_MAJOR: u32 = 7;

/// The Debian package, and how it is installed: no recommended extras.
const PACKAGE: &str = "redis-server";

/// Makes sure `redis-server` (Redis 7 or later) is on `PATH`, installing Debian's package with
/// apt when it is missing (as root only). The system service is not started: the tests start
/// their own servers.
pub(crate) fn ensure() -> Result<()> {
    if let Some(found) = find()? {
        eprintln!("xtask: {}", found.describe());
        return Ok(());
    }
    if !is_root()? {
        bail!(
            "redis-server is not installed and xtask is not root: install Redis {MIN_MAJOR} \
             (on Debian and Ubuntu, `sudo apt-get install -y --no-install-recommends {PACKAGE}`)"
        );
    }
    eprintln!("xtask: redis-server is missing; installing Debian's {PACKAGE}");
    // A fresh machine may have no package lists yet: update once if the first try fails.
    if cmd::run(&mut install_command()).is_err() {
        cmd::run(Command::new("apt-get").args(["update", "-q"]))
            .context("apt-get update failed")?;
        cmd::run(&mut install_command()).with_context(|| format!("could not install {PACKAGE}"))?;
    }
    match find()? {
        Some(found) => {
            eprintln!("xtask: installed {}", found.describe());
            Ok(())
        }
        None => bail!("{PACKAGE} was installed but redis-server is not on PATH"),
    }
}

/// `apt-get install` of the package. `RUNLEVEL=1` makes Debian's `invoke-rc.d` leave the
/// service stopped: on a machine without systemd, the package's scripts would start one on
/// port 6379 otherwise.
fn install_command() -> Command {
    let mut command = Command::new("apt-get");
    command
        .args(["install", "-y", "-q", "--no-install-recommends", PACKAGE])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .env("RUNLEVEL", "1");
    command
}

/// A `redis-server` found on `PATH`.
struct Found {
    path: PathBuf,
    version: String,
}

impl Found {
    fn describe(&self) -> String {
        format!("redis-server {} at {}", self.version, self.path.display())
    }
}

/// The `redis-server` on `PATH`, if any; an error if it is older than Redis 7.
fn find() -> Result<Option<Found>> {
    let Some(path) = on_path("redis-server", std::env::var_os("PATH").as_deref()) else {
        return Ok(None);
    };
    let output = cmd::output(Command::new(&path).arg("--version"))?;
    let Some(version) = version(&output) else {
        bail!(
            "could not read the version of {}: {output:?}",
            path.display()
        );
    };
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok());
    if major.is_none_or(|major| major < MIN_MAJOR) {
        bail!(
            "{} is Redis {version}; the Redis backend's tests need Redis {MIN_MAJOR} or later",
            path.display()
        );
    }
    Ok(Some(Found {
        path,
        version: version.to_owned(),
    }))
}

/// The version in `redis-server --version`'s output: `Redis server v=7.0.15 sha=...`.
fn version(output: &str) -> Option<&str> {
    output
        .split_whitespace()
        .find_map(|word| word.strip_prefix("v="))
}

/// The first executable file called `name` in the directories of `path`.
fn on_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn is_root() -> Result<bool> {
    let uid = cmd::output(Command::new("id").arg("-u")).context("could not run `id -u`")?;
    Ok(uid.trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_redis_server_s_banner() {
        let banner = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1\n";
        assert_eq!(version(banner), Some("7.0.15"));
        assert_eq!(version("redis-server: command not found"), None);
    }

    #[test]
    fn the_install_leaves_the_service_stopped_and_asks_nothing() {
        let command = install_command();
        let args: Vec<_> = command.get_args().collect();
        assert_eq!(
            args,
            [
                "install",
                "-y",
                "-q",
                "--no-install-recommends",
                "redis-server"
            ]
        );
        let envs: Vec<_> = command.get_envs().collect();
        assert!(envs.contains(&("RUNLEVEL".as_ref(), Some("1".as_ref()))));
        assert!(envs.contains(&("DEBIAN_FRONTEND".as_ref(), Some("noninteractive".as_ref()))));
    }

    #[test]
    fn only_executables_on_the_path_are_found() {
        let dir = std::env::temp_dir().join(format!("xtask-path-{}", std::process::id()));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let plain = dir.join("redis-server");
        std::fs::write(&plain, "not executable").unwrap();
        let path = std::env::join_paths([&dir, &bin]).unwrap();
        assert_eq!(on_path("redis-server", Some(&path)), None);
        let exe = bin.join("redis-server");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(on_path("redis-server", Some(&path)), Some(exe));
        assert_eq!(on_path("redis-server", None), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The path a machine with Redis takes: found, recent enough, nothing installed. The test
    /// step of `cargo xtask ci` runs `ensure` before the tests, so it holds there.
    #[test]
    fn the_installed_redis_server_is_found() {
        let found = find().unwrap().expect("redis-server on PATH");
        assert!(found.path.ends_with("redis-server"), "{}", found.describe());
        ensure().unwrap();
    }
}
