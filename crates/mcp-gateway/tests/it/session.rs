//! Session-based clients: a child of their own, every message relayed both ways, the child
//! stopped with the session.

use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_transport::{Connection, Sender};
use serde_json::json;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_gets_a_child_of_its_own_which_answers_initialize() {
    let gateway = Running::child("normal").await;
    let (mut a, init) = session(&gateway.url).await;
    assert_eq!(result(&init)["serverInfo"]["name"], "test-child");
    let (mut b, _) = session(&gateway.url).await;
    let (pid_a, pid_b) = (child_pid(&mut a, 1).await, child_pid(&mut b, 1).await);
    assert_ne!(pid_a, pid_b);
    let (echoed, _) = ask(&mut a, tool(2, "echo", json!({"text": "hello"}))).await;
    assert_eq!(text(&echoed), "hello");
    gateway.shutdown().await;
    assert!(!alive(pid_a) && !alive(pid_b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_client_under_its_own_token() {
    let gateway = Running::child("normal").await;
    let (mut conn, _) = session(&gateway.url).await;
    let mut request = tool(1, "progress", json!({"steps": 3}));
    let params =
        json!({"name": "progress", "arguments": {"steps": 3}, "_meta": {"progressToken": "mine"}});
    request.params = to_raw_value(&params).ok();
    let (response, others) = ask(&mut conn, request).await;
    assert_eq!(text(&response), "done");
    let tokens: Vec<_> = others
        .iter()
        .filter_map(|m| match m {
            Message::Notification(n) => n.parse_params::<serde_json::Value>().ok(),
            _ => None,
        })
        .map(|p| (p["progressToken"].clone(), p["progress"].clone()))
        .collect();
    assert_eq!(
        tokens,
        [
            (json!("mine"), json!(1)),
            (json!("mine"), json!(2)),
            (json!("mine"), json!(3))
        ]
    );
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_childs_sampling_request_reaches_the_client_and_the_answer_the_child() {
    let gateway = Running::child("normal").await;
    let (mut conn, _) = session(&gateway.url).await;
    within(conn.sender().send(tool(1, "sample", json!({})).into()))
        .await
        .unwrap();
    let asked = match within(conn.recv()).await.unwrap() {
        Some(Message::Request(request)) => request,
        other => panic!("expected the child's request, got {other:?}"),
    };
    assert_eq!(asked.method, "sampling/createMessage");
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"});
    let answer = Response::success(asked.id, to_raw_value(&answer).unwrap());
    within(conn.sender().send(answer.into())).await.unwrap();
    let (response, _) = response_to(&mut conn, &1.into()).await;
    assert_eq!(text(&response), "sampled");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_stops_the_sessions_child() {
    let gateway = Running::child("normal").await;
    let (mut conn, _) = session(&gateway.url).await;
    let pid = child_pid(&mut conn, 1).await;
    within(conn.close()).await.unwrap();
    until(|| !alive(pid)).await;
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_reaches_the_child_under_the_id_it_knows() {
    let gateway = Running::child("normal").await;
    let (mut conn, _) = session(&gateway.url).await;
    let sender = conn.sender();
    within(sender.send(tool(7, "sleep", json!({"ms": 60_000})).into()))
        .await
        .unwrap();
    // The child's `cancelled` tool runs on a thread of its own while the sleep waits.
    let params = json!({"requestId": 7, "reason": "changed my mind"});
    let cancelled =
        mcp_jsonrpc::Notification::new("notifications/cancelled", to_raw_value(&params).ok());
    within(sender.send(cancelled.into())).await.unwrap();
    let mut seen = json!([]);
    for id in 10..40 {
        let (response, _) = ask(&mut conn, tool(id, "cancelled", json!({}))).await;
        seen = serde_json::from_str(&text(&response)).unwrap();
        if seen != json!([]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The gateway's id for the sleep, the session's second request after `initialize`.
    assert_eq!(seen, json!([2]));
    gateway.shutdown().await;
}
