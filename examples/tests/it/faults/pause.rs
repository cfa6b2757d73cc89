//! A node paused past its lease (SIGSTOP, as a VM pause or a long stall), its sessions taken
//! over by another node meanwhile, then resumed (SIGCONT): its stale copies remove nothing
//! live, and what reaches it is served by the live holder or refused, never run by the stale
//! application and never left unanswered.

use std::time::Duration;

use mcp_streamable_redis::testing::RedisServer;
use serde_json::json;

use super::http::{WAIT, call, call_within, initialize};
use super::{Node, PAST_THE_LEASE, Scratch, cut_node};

/// Two nodes on one Redis, `a` and `b`, with `extra` arguments.
fn two_nodes(scratch: &Scratch, redis: &RedisServer, extra: &[&str]) -> (Node, Node) {
    let a = Node::start(scratch.path(), &redis.url(), "a", extra);
    let b = Node::start(scratch.path(), &redis.url(), "b", extra);
    (a, b)
}

/// A session of `a`'s taken over by `b` while `a` was paused: `b`'s first call on it.
async fn take_over_while_paused(a: &Node, b: &Node, sid: &str) {
    a.pause();
    tokio::time::sleep(PAST_THE_LEASE).await;
    let answer = call(b.addr, sid, 1, "echo", json!({"text": "taken"})).await;
    assert_eq!(answer.text(1).as_deref(), Some("taken"), "{answer:?}");
    a.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_nodes_stale_copy_idles_out_without_ending_the_live_session() {
    let scratch = Scratch::new("stale-idle");
    let redis = RedisServer::start().expect("redis-server starts");
    let (a, b) = two_nodes(&scratch, &redis, &["--idle-timeout", "3"]);
    let sid = initialize(a.addr).await;
    take_over_while_paused(&a, &b, &sid).await;
    // a's copy idles out (3 s) while b serves the session: every call on it goes on.
    let mut failed = Vec::new();
    for id in 2..18 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let answer = call(b.addr, &sid, id, "echo", json!({"text": "on"})).await;
        if answer.text(id).as_deref() != Some("on") {
            failed.push((id, answer.status, answer.body));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of 16 calls failed: {failed:?}",
        failed.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reaching_a_resumed_node_is_served_by_the_live_holder() {
    let scratch = Scratch::new("stale-call");
    let redis = RedisServer::start().expect("redis-server starts");
    let (a, b) = two_nodes(&scratch, &redis, &[]);
    let sid = initialize(a.addr).await;
    take_over_while_paused(&a, &b, &sid).await;
    // At once, before a has learnt anything: the call reaches a's stale copy.
    let answer = call(a.addr, &sid, 2, "count", json!({"key": "k2"})).await;
    assert!(answer.ended, "the call was left unanswered: {answer:?}");
    match answer.text(2) {
        // Served: by b, the live holder.
        Some(pid) => assert_eq!(pid, b.pid().to_string(), "ran on {pid}: {answer:?}"),
        // Refused: with an error the client can act on.
        None => assert!(
            answer.response(2).is_some() || answer.status >= 400,
            "neither an answer nor a refusal: {answer:?}"
        ),
    }
    assert!(
        !a.executions().contains(&"k2".to_owned()),
        "the stale application ran the call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_forwarded_to_a_paused_holder_runs_once() {
    let scratch = Scratch::new("once");
    let redis = RedisServer::start().expect("redis-server starts");
    let (a, b) = two_nodes(&scratch, &redis, &[]);
    let sid = initialize(a.addr).await;
    a.pause();
    // Through b to the paused holder: it cannot answer, its lease lapses, b takes over.
    let call = tokio::spawn({
        let (addr, sid) = (b.addr, sid.clone());
        async move { call_within(addr, &sid, 1, "count", json!({"key": "k1"}), WAIT).await }
    });
    tokio::time::sleep(Duration::from_secs(7)).await;
    a.resume();
    let answer = call.await.unwrap();
    assert!(answer.ended, "unanswered: {answer:?}");
    // Whatever a does with what it read while paused, it does it now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let runs: usize = [&a, &b]
        .iter()
        .map(|n| n.executions().iter().filter(|k| *k == "k1").count())
        .sum();
    assert!(runs <= 1, "the call ran {runs} times: {answer:?}");
    if answer.text(1).is_some() {
        assert_eq!(runs, 1, "answered, yet it ran {runs} times");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_its_paused_holder_began_is_not_run_again_by_the_node_taking_over() {
    let scratch = Scratch::new("began");
    let redis = RedisServer::start().expect("redis-server starts");
    let (a, cutter) = cut_node(scratch.path(), &redis.url(), "a", &[]).await;
    let b = Node::start(scratch.path(), &redis.url(), "b", &[]);
    let sid = initialize(a.addr).await;
    // a's answers to b never come: b's forward reaches a, which begins the call (it takes 3
    // s), and b waits for a head that does not come.
    cutter.mute();
    let call = tokio::spawn({
        let (addr, sid) = (b.addr, sid.clone());
        let arguments = json!({"key": "k1", "delay_ms": 3000});
        async move { call_within(addr, &sid, 1, "count", arguments, WAIT).await }
    });
    let ran = until(Duration::from_secs(10), || {
        a.executions().contains(&"k1".into())
    })
    .await;
    assert!(ran, "the forward never reached a");
    // Then a stalls past its lease: b takes the session over.
    a.pause();
    let answer = call.await.unwrap();
    a.resume();
    assert!(answer.ended, "unanswered: {answer:?}");
    assert_eq!(a.executions(), ["k1"]);
    assert!(
        !b.executions().contains(&"k1".to_owned()),
        "b ran the call a began: {answer:?}"
    );
    // What a began and could not answer is answered with N4's error, from a's stream.
    let response = answer.response(1).expect("a response to the call");
    assert_eq!(response["error"]["code"], -32603, "{answer:?}");
}

/// Whether `ready` turns true within `limit`, looked at every 20 ms.
async fn until(limit: Duration, ready: impl Fn() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if ready() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ready()
}
