//! A node killed and started again at once under the same name, as a container restart with a
//! fixed pod name does: its sessions go on within the failover time.

use std::time::{Duration, Instant};

use mcp_streamable_redis::testing::RedisServer;
use serde_json::json;

use super::http::{WAIT, call_within, initialize};
use super::{Node, Scratch};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarted_under_its_name_does_not_strand_its_sessions() {
    let scratch = Scratch::new("same-name");
    let redis = RedisServer::start().expect("redis-server starts");
    let mut a = Node::start(scratch.path(), &redis.url(), "a", &[]);
    let b = Node::start(scratch.path(), &redis.url(), "b", &[]);
    let sid = initialize(a.addr).await;
    a.kill();
    let _a = Node::start(scratch.path(), &redis.url(), "a", &[]);
    let started = Instant::now();
    let answer = call_within(
        b.addr,
        &sid,
        1,
        "echo",
        json!({"text": "on"}),
        Duration::from_secs(8),
    )
    .await;
    assert_eq!(answer.text(1).as_deref(), Some("on"), "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "went on only after {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_logged_at_info_names_its_session() {
    let scratch = Scratch::new("takeover-log");
    let redis = RedisServer::start().expect("redis-server starts");
    let mut a = Node::start_logging(scratch.path(), &redis.url(), "a", &[], "info");
    let b = Node::start_logging(scratch.path(), &redis.url(), "b", &[], "info");
    let sid = initialize(a.addr).await;
    a.kill();
    let answer = call_within(b.addr, &sid, 1, "echo", json!({"text": "on"}), WAIT).await;
    assert_eq!(answer.text(1).as_deref(), Some("on"), "{answer:?}");
    let log = b.log();
    let line = log
        .lines()
        .find(|l| l.contains("session taken over"))
        .unwrap_or_else(|| panic!("no takeover line at info: {log}"));
    assert!(
        line.contains(&sid),
        "the takeover line does not name {sid}: {line}"
    );
}
