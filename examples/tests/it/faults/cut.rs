//! The connections between nodes cut while a call runs: the node the client reached asks the
//! holder again under the same forward, the call runs once, and its client gets every event of
//! it once.

use std::time::Duration;

use mcp_streamable_redis::testing::RedisServer;
use serde_json::json;

use super::http::{call, initialize};
use super::{Node, Scratch, cut_node};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_connection_between_nodes_is_cut_runs_once_and_is_answered() {
    let scratch = Scratch::new("cut");
    let redis = RedisServer::start().expect("redis-server starts");
    let (a, cutter) = cut_node(scratch.path(), &redis.url(), "a", &[]).await;
    let b = Node::start(scratch.path(), &redis.url(), "b", &[]);
    let sid = initialize(a.addr).await;
    // A call through b, held by a: the connection between them cut while it runs.
    let counted = tokio::spawn({
        let (addr, sid) = (b.addr, sid.clone());
        async move {
            call(
                addr,
                &sid,
                1,
                "count",
                json!({"key": "k1", "delay_ms": 1500}),
            )
            .await
        }
    });
    let progress = tokio::spawn({
        let (addr, sid) = (b.addr, sid.clone());
        async move {
            call(
                addr,
                &sid,
                2,
                "progress",
                json!({"steps": 6, "delay_ms": 200}),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(cutter.cut() > 0, "nothing went through the cutter");
    let counted = counted.await.unwrap();
    assert_eq!(counted.text(1), Some(a.pid().to_string()), "{counted:?}");
    assert_eq!(a.executions(), ["k1"], "the call ran once");
    let progress = progress.await.unwrap();
    let steps: Vec<u64> = progress
        .messages()
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_u64().unwrap())
        .collect();
    assert_eq!(
        steps,
        (1..=6).collect::<Vec<_>>(),
        "every event once: {progress:?}"
    );
    assert_eq!(progress.text(2).as_deref(), Some("done"));
}
