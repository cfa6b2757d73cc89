//! What the nodes share fails or cannot keep something: Redis restarted without its data, a
//! result larger than the event store keeps. Nothing waits forever, nothing is lost silently.

use std::time::Duration;

use mcp_streamable_redis::testing::RedisServer;
use serde_json::json;

use super::http::{call, call_within, initialize, resume};
use super::{Node, Scratch};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_without_its_data_ends_every_open_stream() {
    let scratch = Scratch::new("no-data");
    let mut redis = RedisServer::start().expect("redis-server starts");
    let a = Node::start(scratch.path(), &redis.url(), "a", &[]);
    let b = Node::start(scratch.path(), &redis.url(), "b", &[]);
    let sid = initialize(a.addr).await;
    // A call held by a, its stream read through b (and one read on a itself).
    let slow = json!({"steps": 2, "delay_ms": 600_000});
    let through_b = tokio::spawn({
        let (addr, sid, slow) = (b.addr, sid.clone(), slow.clone());
        async move { call_within(addr, &sid, 1, "progress", slow, Duration::from_secs(20)).await }
    });
    let on_a = tokio::spawn({
        let (addr, sid) = (a.addr, sid.clone());
        async move { call_within(addr, &sid, 2, "progress", slow, Duration::from_secs(20)).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    redis.restart().expect("redis-server restarts");
    for (answer, id, node) in [
        (through_b.await.unwrap(), 1, "b"),
        (on_a.await.unwrap(), 2, "a"),
    ] {
        assert!(
            answer.ended,
            "the stream through {node} never ended: {answer:?}"
        );
        // It ended with an error for the call, or the client resumes and learns the session
        // is gone.
        if answer.response(id).is_none() {
            let last = answer.last_event_id().expect("an event id to resume from");
            let resumed = resume(b.addr, &sid, &last, Duration::from_secs(10)).await;
            assert!(
                resumed.ended,
                "the resumption through {node} hung: {resumed:?}"
            );
            assert_eq!(resumed.status, 404, "{resumed:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_larger_than_the_event_store_keeps_reaches_a_client_of_another_node() {
    let scratch = Scratch::new("large");
    let redis = RedisServer::start().expect("redis-server starts");
    let a = Node::start(scratch.path(), &redis.url(), "a", &[]);
    let b = Node::start(scratch.path(), &redis.url(), "b", &[]);
    let sid = initialize(a.addr).await;
    // 1.5 MiB: past the 1 MiB Redis keeps per session, within the 4 MiB of a POST's body.
    let text = "x".repeat(3 << 19);
    let answer = call(b.addr, &sid, 1, "echo", json!({"text": text})).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.text(1).map(|t| t.len()),
        Some(text.len()),
        "{} bytes came: {:.200}",
        answer.body.len(),
        answer.body
    );
}
