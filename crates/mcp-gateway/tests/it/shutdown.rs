//! SIGTERM to the gateway's binary with children running: none is left behind.

use std::process::Stdio;

use mcp_streamable_client::Family;
use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::harness::*;

/// The gateway's process, killed with its process group (and the children it reported) if the
/// test ends before it stopped by itself.
struct Gateway {
    process: tokio::process::Child,
    children: Vec<i32>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(pid) = self.process.id().and_then(|id| Pid::from_raw(id as i32)) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        for pid in self.children.iter().filter_map(|p| Pid::from_raw(*p)) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_gateway_and_leaves_no_child() {
    let mut process = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--pool-size",
            "1",
            "--stop-grace",
            "2",
            "--",
        ])
        .args(["python3", CHILD, "normal"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = process.stdout.take().unwrap();
    let mut gateway = Gateway {
        process,
        children: Vec::new(),
    };
    let mut first = String::new();
    within(BufReader::new(stdout).read_line(&mut first))
        .await
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .expect("the first line")
        .to_owned();

    let mut sessions = Vec::new();
    for _ in 0..3 {
        let (mut conn, _) = session(&url).await;
        gateway.children.push(child_pid(&mut conn, 1).await);
        sessions.push(conn);
    }
    let mut modern = connect(&url, Family::PerRequest).await;
    gateway.children.push(child_pid(&mut modern, 1).await);
    assert!(gateway.children.iter().all(|pid| alive(*pid)));

    let pid = Pid::from_raw(gateway.process.id().unwrap() as i32).unwrap();
    kill_process(pid, Signal::TERM).unwrap();
    let status = within(gateway.process.wait()).await.unwrap();
    assert!(status.success(), "{status}");
    // The gateway reaps its children before it exits.
    let left: Vec<i32> = gateway
        .children
        .iter()
        .copied()
        .filter(|pid| alive(*pid))
        .collect();
    assert!(left.is_empty(), "children left: {left:?}");
}
