//! A child process: started in a process group of its own, its stderr logged under its label,
//! reaped by one task, stopped with SIGTERM to the whole group then SIGKILL after a grace; and
//! the set of every child alive, which the gateway stops at shutdown.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{oneshot, watch};

use crate::error::Error;
use crate::options::Command;

/// The longest stderr line logged whole; the rest of a longer one is dropped.
const MAX_STDERR_LINE: usize = 8 * 1024;

/// A child started, with its pipes to speak MCP over.
pub(crate) struct Spawned {
    pub(crate) process: Process,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
}

/// One child's handle: stopping it, and knowing it is gone.
#[derive(Debug)]
pub(crate) struct Process {
    stop: Mutex<Option<oneshot::Sender<()>>>,
    exited: watch::Receiver<bool>,
}

impl Process {
    /// Stops the child (SIGTERM to its group, SIGKILL after the grace) and returns once it
    /// was reaped; at once if it already was.
    pub(crate) async fn stop(&self) {
        if let Some(stop) = self.stop.lock().unwrap().take() {
            let _ = stop.send(());
        }
        let mut exited = self.exited.clone();
        let _ = exited.wait_for(|gone| *gone).await;
    }
}

/// Every child alive, by process group id: what the gateway stops when it shuts down.
#[derive(Debug, Clone)]
pub(crate) struct Children {
    groups: Arc<Mutex<HashSet<i32>>>,
    count: Arc<watch::Sender<usize>>,
    grace: Duration,
}

impl Children {
    pub(crate) fn new(grace: Duration) -> Self {
        Children {
            groups: Arc::default(),
            count: Arc::new(watch::channel(0).0),
            grace,
        }
    }

    /// How many children are alive.
    pub(crate) fn len(&self) -> usize {
        *self.count.borrow()
    }

    /// Starts `command` in a process group of its own, logging its stderr under `label`.
    pub(crate) fn spawn(&self, command: &Command, label: &str) -> Result<Spawned, Error> {
        let mut child = tokio::process::Command::new(command.program())
            .args(command.arguments())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            // The last resort, should the reaper be dropped with the runtime: the child alone.
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Error::Spawn(e.to_string()))?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let pgid = pgid.ok_or_else(|| Error::Spawn("it exited at once".into()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Error::Spawn("its pipes are missing".into()));
        };
        self.register(pgid);
        tokio::spawn(log_stderr(stderr, label.to_owned()));
        let (stop_tx, stop_rx) = oneshot::channel();
        let (exited_tx, exited_rx) = watch::channel(false);
        let children = self.clone();
        tokio::spawn(async move {
            reap(child, pgid, stop_rx, children.grace).await;
            children.unregister(pgid);
            let _ = exited_tx.send(true);
        });
        tracing::debug!(pid = pgid, label, "child started");
        let process = Process {
            stop: Mutex::new(Some(stop_tx)),
            exited: exited_rx,
        };
        Ok(Spawned {
            process,
            stdin,
            stdout,
        })
    }

    /// Stops every child: SIGTERM to each group, SIGKILL to those left after the grace; returns
    /// once all were reaped (or after a second grace, should one survive SIGKILL).
    pub(crate) async fn stop_all(&self) {
        self.signal_all(Signal::TERM);
        if self.emptied_within(self.grace).await {
            return;
        }
        self.signal_all(Signal::KILL);
        if !self.emptied_within(self.grace).await {
            tracing::error!(left = self.len(), "children survived SIGKILL");
        }
    }

    fn signal_all(&self, signal: Signal) {
        let groups: Vec<i32> = self.groups.lock().unwrap().iter().copied().collect();
        for pgid in groups {
            signal_group(pgid, signal);
        }
    }

    async fn emptied_within(&self, grace: Duration) -> bool {
        let mut count = self.count.subscribe();
        tokio::time::timeout(grace, count.wait_for(|n| *n == 0))
            .await
            .is_ok()
    }

    fn register(&self, pgid: i32) {
        let mut groups = self.groups.lock().unwrap();
        groups.insert(pgid);
        self.count.send_replace(groups.len());
    }

    fn unregister(&self, pgid: i32) {
        let mut groups = self.groups.lock().unwrap();
        groups.remove(&pgid);
        self.count.send_replace(groups.len());
    }
}

/// Waits for the child to exit, or to be told to stop it; then kills what is left of its group
/// (a grandchild that outlived it) and reaps it.
async fn reap(mut child: Child, pgid: i32, stop: oneshot::Receiver<()>, grace: Duration) {
    tokio::select! {
        status = child.wait() => {
            tracing::debug!(pid = pgid, ?status, "child exited");
        }
        _ = stop => {
            signal_group(pgid, Signal::TERM);
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                tracing::warn!(pid = pgid, ?grace, "child ignored SIGTERM: killed");
                signal_group(pgid, Signal::KILL);
                let _ = child.wait().await;
            }
        }
    }
    signal_group(pgid, Signal::KILL);
}

/// Sends `signal` to the process group `pgid`; a group already gone is not an error.
fn signal_group(pgid: i32, signal: Signal) {
    let Some(pid) = Pid::from_raw(pgid) else {
        return;
    };
    match kill_process_group(pid, signal) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::SRCH => {}
        Err(e) => tracing::warn!(pid = pgid, error = %e, "could not signal the child's group"),
    }
}

/// Logs each line the child writes on stderr, naming the session it serves; a longer line
/// than [`MAX_STDERR_LINE`] is logged in pieces, so memory stays bounded and the pipe drained.
async fn log_stderr(stderr: tokio::process::ChildStderr, label: String) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = MAX_STDERR_LINE as u64;
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                tracing::info!(mcp.session.id = %label, "child: {}", text.trim_end());
            }
        }
    }
}
