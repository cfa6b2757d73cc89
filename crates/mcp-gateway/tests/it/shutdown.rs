//! SIGTERM to the gateway's binary with children running: none is left behind.

use mcp_streamable_client::Family;
use rustix::process::{Pid, Signal, kill_process};

use crate::binary::Binary;
use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_gateway_and_leaves_no_child() {
    let mut gateway = Binary::serve([
        "--addr",
        "127.0.0.1:0",
        "--pool-size",
        "1",
        "--stop-grace",
        "2",
    ])
    .await;
    let url = gateway.url.clone();

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
