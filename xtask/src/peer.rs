//! Peer processes: a server started in the background and read for its address, and a client run
//! to its end. Every wait is bounded, and a process is killed when its handle is dropped, so no
//! path (a failed check, an early `?`, a panic) leaves one running.

use std::{
    fs::{self, File},
    path::Path,
    process::{Child, Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

/// How long a server may take to print its address (the Python server imports a lot).
pub(crate) const SERVER_START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a client may run. The scripts stop themselves after 60 s; this catches the rest.
pub(crate) const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);

/// A child process, killed and reaped when dropped.
#[derive(Debug)]
pub(crate) struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        // Already gone is fine: kill fails, wait reaps.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` with stdout and stderr going to files.
pub(crate) fn spawn(mut command: Command, stdout: &Path, stderr: &Path) -> Result<Process> {
    let program = command.get_program().to_string_lossy().into_owned();
    command
        .stdin(Stdio::null())
        .stdout(File::create(stdout)?)
        .stderr(File::create(stderr)?);
    let child = command
        .spawn()
        .with_context(|| format!("could not start {program}"))?;
    Ok(Process(child))
}

/// A server that printed `listening on URL`; it is killed when dropped.
#[derive(Debug)]
pub(crate) struct Server {
    process: Process,
    url: String,
}

impl Server {
    /// Starts `command` and waits, up to `timeout`, for its first stdout line.
    pub(crate) fn start(
        command: Command,
        stdout: &Path,
        stderr: &Path,
        timeout: Duration,
    ) -> Result<Server> {
        let mut process = spawn(command, stdout, stderr)?;
        let deadline = Instant::now() + timeout;
        loop {
            let text = fs::read_to_string(stdout).unwrap_or_default();
            if let Some((first, _)) = text.split_once('\n') {
                let url = listening_url(first).with_context(|| {
                    format!("its first line is {first:?}, not `listening on http://...`")
                })?;
                return Ok(Server { process, url });
            }
            if let Some(status) = process.0.try_wait()? {
                bail!("it exited ({status}) before printing its address");
            }
            if Instant::now() >= deadline {
                bail!("it printed no address in {} s", timeout.as_secs());
            }
            thread::sleep(POLL);
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Its process id, for a client that kills it on purpose.
    pub(crate) fn pid(&self) -> u32 {
        self.process.0.id()
    }

    /// `Some(status)` if the server is no longer running.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.process.0.try_wait().ok().flatten()
    }
}

/// The URL in a `listening on http://127.0.0.1:PORT/mcp` line.
fn listening_url(line: &str) -> Option<String> {
    let url = line.trim().strip_prefix("listening on ")?;
    url.starts_with("http://").then(|| url.to_string())
}

/// How a client run ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    Exited(ExitStatus),
    /// Still running at the deadline, so killed.
    TimedOut,
}

/// Runs `command` to its end or for `timeout` at most, and returns how it ended and its stdout.
pub(crate) fn run_client(
    command: Command,
    stdout: &Path,
    stderr: &Path,
    timeout: Duration,
) -> Result<(Ended, String)> {
    let mut process = spawn(command, stdout, stderr)?;
    let deadline = Instant::now() + timeout;
    let ended = loop {
        if let Some(status) = process.0.try_wait()? {
            break Ended::Exited(status);
        }
        if Instant::now() >= deadline {
            break Ended::TimedOut;
        }
        thread::sleep(POLL);
    };
    drop(process);
    Ok((ended, fs::read_to_string(stdout).unwrap_or_default()))
}

/// The last `lines` lines of a log file, for a failure report.
pub(crate) fn tail(path: &Path, lines: usize) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|line| line.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-peer-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_url_is_read_from_the_first_line() {
        assert_eq!(
            listening_url("listening on http://127.0.0.1:4100/mcp\n").as_deref(),
            Some("http://127.0.0.1:4100/mcp")
        );
        assert_eq!(listening_url("Listening at 4100"), None);
        assert_eq!(listening_url("listening on 127.0.0.1:4100"), None);
    }

    #[test]
    fn a_server_is_started_read_and_killed() {
        let dir = scratch("server");
        let (out, err) = (dir.join("out"), dir.join("err"));
        let script = "echo 'listening on http://127.0.0.1:9/mcp'; exec sleep 30";
        let start = Instant::now();
        let mut server = Server::start(sh(script), &out, &err, Duration::from_secs(5)).unwrap();
        assert_eq!(server.url(), "http://127.0.0.1:9/mcp");
        assert_eq!(server.exited(), None);
        let pid = server.process.0.id();
        drop(server);
        assert!(start.elapsed() < Duration::from_secs(5));
        // Reaped: the pid is gone (or reused by something that is not our sleep).
        let status = fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(!status.contains("sleep"), "{status}");

        let error = Server::start(
            sh("echo hello; sleep 30"),
            &out,
            &err,
            Duration::from_secs(5),
        );
        assert!(format!("{:#}", error.unwrap_err()).contains("\"hello\""));
        let error = Server::start(sh("exit 3"), &out, &err, Duration::from_secs(5)).unwrap_err();
        assert!(error.to_string().contains("exited"), "{error}");
        let error = Server::start(sh("exec sleep 30"), &out, &err, Duration::from_millis(200));
        assert_eq!(
            error.unwrap_err().to_string(),
            "it printed no address in 0 s"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_client_runs_to_its_end_or_its_deadline() {
        let dir = scratch("client");
        let (out, err) = (dir.join("out"), dir.join("err"));
        let (ended, stdout) = run_client(sh("echo ok: fine"), &out, &err, CLIENT_TIMEOUT).unwrap();
        assert!(matches!(ended, Ended::Exited(status) if status.success()));
        assert_eq!(stdout, "ok: fine\n");
        let start = Instant::now();
        let (ended, _) =
            run_client(sh("exec sleep 30"), &out, &err, Duration::from_millis(200)).unwrap();
        assert_eq!(ended, Ended::TimedOut);
        assert!(start.elapsed() < Duration::from_secs(5));
        fs::write(&err, "a\nb\nc\n").unwrap();
        assert_eq!(tail(&err, 2), ["b", "c"]);
        fs::remove_dir_all(dir).unwrap();
    }
}
