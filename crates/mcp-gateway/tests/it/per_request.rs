//! Per-request (2026-07-28) clients: a warm child shared, ids remapped so requests never mix,
//! a client that leaves cancelling its request at the child, discovery.

use mcp_jsonrpc::{Request, to_raw_value};
use mcp_streamable_client::Family;
use mcp_transport::{Connection, Sender};
use serde_json::json;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_several_clients_share_a_warm_child_and_read_complete_results() {
    let gateway = Running::child("normal").await;
    let mut a = connect(&gateway.url, Family::PerRequest).await;
    let mut b = connect(&gateway.url, Family::PerRequest).await;
    let (pid_a, pid_b) = (child_pid(&mut a, 1).await, child_pid(&mut b, 1).await);
    assert_eq!(pid_a, pid_b, "one pool child serves both");
    let (echoed, _) = ask(&mut a, tool(2, "echo", json!({"text": "hi"}))).await;
    let echoed = result(&echoed);
    assert_eq!(echoed["resultType"], "complete");
    assert_eq!(
        echoed["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test-child"
    );
    gateway.shutdown().await;
    assert!(!alive(pid_a));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_under_one_id_never_mix() {
    let gateway = Running::child("normal").await;
    let mut tasks = Vec::new();
    for word in ["first", "second", "third", "fourth"] {
        let url = gateway.url.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = connect(&url, Family::PerRequest).await;
            // Every client says id 1; the waits overlap at the child.
            let (response, _) = ask(
                &mut conn,
                tool(1, "sleep", json!({"ms": 300, "text": word})),
            )
            .await;
            (word, text(&response))
        }));
    }
    for task in tasks {
        let (asked, got) = within(task).await.unwrap();
        assert_eq!(asked, got);
    }
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_cancels_its_request_at_the_child() {
    let gateway = Running::child("normal").await;
    let leaving = connect(&gateway.url, Family::PerRequest).await;
    let mut staying = connect(&gateway.url, Family::PerRequest).await;
    // Warm the child first, so that the sleep is the pool's second call (its first is the
    // gateway's own `initialize`), whatever the order of the rest.
    let _ = child_pid(&mut staying, 1).await;
    within(
        leaving
            .sender()
            .send(tool(5, "sleep", json!({"ms": 60_000})).into()),
    )
    .await
    .unwrap();
    wait_for_sleep_to_start(&mut staying).await;
    let params = json!({"requestId": 5});
    let cancel =
        mcp_jsonrpc::Notification::new("notifications/cancelled", to_raw_value(&params).ok());
    within(leaving.sender().send(cancel.into())).await.unwrap();
    let mut seen = json!([]);
    for id in 100..400 {
        let (response, _) = ask(&mut staying, tool(id, "cancelled", json!({}))).await;
        seen = serde_json::from_str(&text(&response)).unwrap();
        if seen != json!([]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let ids = seen
        .as_array()
        .expect("the ids the child was told were cancelled");
    assert_eq!(ids.len(), 1, "{seen}");
    assert_ne!(
        ids[0],
        json!(5),
        "the child knows the request by the gateway's id"
    );
    gateway.shutdown().await;
}

/// Lets the sleep reach the child before it is cancelled: a round trip behind it.
async fn wait_for_sleep_to_start(conn: &mut mcp_streamable_client::ClientConnection) {
    let (echoed, _) = ask(conn, tool(2, "echo", json!({"text": "after"}))).await;
    assert_eq!(text(&echoed), "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_is_answered_from_the_childs_initialize() {
    let gateway = Running::child("normal").await;
    let mut conn = connect(&gateway.url, Family::PerRequest).await;
    let (response, _) = ask(&mut conn, Request::new(1, "server/discover", None)).await;
    let discovered = result(&response);
    let versions = discovered["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")));
    assert_eq!(discovered["capabilities"], json!({"tools": {}}));
    assert_eq!(
        discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test-child"
    );
    gateway.shutdown().await;
}

/// 2026-07-28 requires `ttlMs` and `cacheScope` on the results of its cacheable methods (the
/// Python SDK 2.3.0 refuses a `tools/list` without them); a child of a session revision never
/// writes them, so the gateway does: immediately stale and private, as it cannot know more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cacheable_results_carry_the_cache_fields_the_child_never_wrote() {
    let gateway = Running::child("normal").await;
    let mut conn = connect(&gateway.url, Family::PerRequest).await;
    for (id, method) in [(1, "tools/list"), (2, "server/discover")] {
        let (response, _) = ask(&mut conn, Request::new(id, method, None)).await;
        let listed = result(&response);
        assert_eq!(listed["ttlMs"], 0, "{method}: {listed}");
        assert_eq!(listed["cacheScope"], "private", "{method}: {listed}");
    }
    let (echoed, _) = ask(&mut conn, tool(3, "echo", json!({"text": "hi"}))).await;
    let echoed = result(&echoed);
    assert!(
        echoed.get("ttlMs").is_none(),
        "tools/call is not cacheable: {echoed}"
    );
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_clients_sharing_a_child_goes_to_each_under_its_own_token() {
    let gateway = Running::child("normal").await;
    let mut tasks = Vec::new();
    for steps in [2, 3] {
        let url = gateway.url.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = connect(&url, Family::PerRequest).await;
            // Both clients pick the same token; the child sees two of the gateway's.
            let params = json!({"name": "progress", "arguments": {"steps": steps}, "_meta": {"progressToken": "t"}});
            let request = Request::new(1, "tools/call", to_raw_value(&params).ok());
            let (response, others) = ask(&mut conn, request).await;
            assert_eq!(text(&response), "done");
            let progress: Vec<_> = others
                .iter()
                .filter_map(|m| match m {
                    mcp_jsonrpc::Message::Notification(n) => n.parse_params::<serde_json::Value>().ok(),
                    _ => None,
                })
                .map(|p| (p["progressToken"].clone(), p["progress"].clone()))
                .collect();
            let expected: Vec<_> = (1..=steps).map(|n| (json!("t"), json!(n))).collect();
            assert_eq!(progress, expected);
        }));
    }
    for task in tasks {
        within(task).await.unwrap();
    }
    gateway.shutdown().await;
}
