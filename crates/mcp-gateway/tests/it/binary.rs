//! The gateway's binary as a process of the test's: `mcp-gateway serve ARGS -- python3 CHILD
//! normal`, in a process group of its own, its first line read for the URL it serves; killed
//! with its group, and every child the test noted, if the test ends before it stopped.

use std::ffi::OsStr;
use std::process::Stdio;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::ChildStdout;

use crate::harness::{CHILD, within};

/// A running `mcp-gateway serve`.
pub(crate) struct Binary {
    pub(crate) process: tokio::process::Child,
    /// The URL it printed: `http(s)://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
    /// Children the test saw, stopped with it.
    pub(crate) children: Vec<i32>,
    /// Its process id, which is its process group's too.
    pid: i32,
    /// What it prints after its first line.
    stdout: BufReader<ChildStdout>,
}

impl Binary {
    /// Starts `mcp-gateway serve` with `args` in front of the test child, and waits for the
    /// line that says where it listens; its log goes nowhere.
    pub(crate) async fn serve<I, S>(args: I) -> Binary
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Binary::start(args, &[], Stdio::null()).await
    }

    /// As [`Binary::serve`], its log (stderr) kept for [`Binary::log`].
    pub(crate) async fn serve_logged<I, S>(args: I) -> Binary
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Binary::start(args, &[], Stdio::piped()).await
    }

    /// As [`Binary::serve_logged`], exporting its spans and metrics over OTLP to `endpoint`
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub(crate) async fn serve_exporting<I, S>(args: I, endpoint: &str) -> Binary
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)];
        Binary::start(args, &env, Stdio::piped()).await
    }

    async fn start<I, S>(args: I, env: &[(&str, &str)], log: Stdio) -> Binary
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut process = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
            .arg("serve")
            .args(args)
            .args(["--", "python3", CHILD, "normal"])
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(log)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(process.stdout.take().unwrap());
        let pid = process.id().expect("just started") as i32;
        let mut first = String::new();
        within(stdout.read_line(&mut first)).await.unwrap();
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the gateway did not start: {first:?}"))
            .to_owned();
        Binary {
            process,
            url,
            children: Vec::new(),
            pid,
            stdout,
        }
    }

    /// Stops it with SIGTERM and returns all it logged, once it exited (started by
    /// [`Binary::serve_logged`]).
    pub(crate) async fn log(mut self) -> String {
        let mut stderr = self.process.stderr.take().expect("serve_logged");
        if let Some(pid) = Pid::from_raw(self.pid) {
            let _ = rustix::process::kill_process(pid, Signal::TERM);
        }
        let mut log = String::new();
        within(stderr.read_to_string(&mut log)).await.unwrap();
        within(self.process.wait()).await.unwrap();
        log
    }

    /// The next line it prints, without its end.
    pub(crate) async fn line(&mut self) -> String {
        let mut line = String::new();
        within(self.stdout.read_line(&mut line)).await.unwrap();
        line.trim_end().to_owned()
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        if let Some(pid) = Pid::from_raw(self.pid) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        for pid in self.children.iter().filter_map(|p| Pid::from_raw(*p)) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}
