//! Children that fail: each turns into JSON-RPC errors and an ended session, never a hang,
//! never the gateway's death; sessions dropped without DELETE leave no child.

use std::time::Duration;

use mcp_gateway::Command;
use mcp_jsonrpc::code;
use mcp_streamable_client::Family;
use mcp_streamable_server::Config;
use mcp_transport::{Connection, Sender};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_during_initialize_is_an_error_not_a_hang() {
    let gateway = Running::child("exit-on-initialize").await;
    let mut conn = connect(&gateway.url, Family::Session).await;
    let init = initialize(&mut conn).await;
    assert_eq!(init.result().unwrap_err().code, code::INTERNAL_ERROR);
    assert_eq!(error_message(&init), "the stdio server exited");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_never_answers_gets_the_request_timeout() {
    let options = options().request_timeout(Duration::from_millis(500));
    let gateway = Running::start(child("mute"), options, Config::default()).await;
    let mut conn = connect(&gateway.url, Family::Session).await;
    let init = initialize(&mut conn).await;
    assert_eq!(
        error_message(&init),
        "the stdio server did not answer within 500ms"
    );
    // A child that never answered its `initialize` is stopped (the pool's too, likewise).
    until(|| gateway.gateway.children() == 0).await;
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_writes_garbage_fails_the_waiting_requests_and_ends_the_session() {
    let gateway = Running::child("normal").await;
    let (mut conn, _) = session(&gateway.url).await;
    let pid = child_pid(&mut conn, 1).await;
    let sender = conn.sender();
    within(sender.send(tool(2, "sleep", json!({"ms": 60_000})).into()))
        .await
        .unwrap();
    within(sender.send(tool(3, "garble", json!({})).into()))
        .await
        .unwrap();
    for response in responses_to(&mut conn, &[2, 3]).await {
        let message = error_message(&response);
        assert_eq!(
            message,
            "the stdio server wrote a line that is not JSON-RPC"
        );
    }
    until(|| !alive(pid)).await;
    // The session ends once the gateway has seen its child go (a moment after the child's
    // exit): then its id is unknown. At most 50 tries, 100 ms apart.
    let mut ended = false;
    for id in 4..54 {
        let after = within(sender.send(tool(id, "echo", json!({"text": "x"})).into())).await;
        if after.is_err() {
            ended = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(ended, "the session outlived its child by 5 s");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_over_the_bound_ends_the_session() {
    let options = options().max_message_size(1_000);
    let gateway = Running::start(child("normal"), options, Config::default()).await;
    let (mut conn, _) = session(&gateway.url).await;
    let (response, _) = ask(&mut conn, tool(1, "huge", json!({"bytes": 5_000}))).await;
    assert_eq!(
        error_message(&response),
        "the stdio server wrote a line over 1000 bytes"
    );
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_does_not_exist_is_an_error_and_the_gateway_stays_up() {
    let missing = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/children/missing"
    ));
    let gateway = Running::start(missing, options(), Config::default()).await;
    for _ in 0..2 {
        let mut conn = connect(&gateway.url, Family::Session).await;
        let init = initialize(&mut conn).await;
        assert!(error_message(&init).starts_with("the stdio server could not be started: "));
    }
    let mut conn = connect(&gateway.url, Family::PerRequest).await;
    let (response, _) = ask(&mut conn, tool(1, "echo", json!({"text": "x"}))).await;
    assert!(error_message(&response).starts_with("the stdio server could not be started: "));
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_killed_mid_call_fails_the_call_at_once() {
    let gateway = Running::child("normal").await;
    let (mut conn, _) = session(&gateway.url).await;
    let pid = child_pid(&mut conn, 1).await;
    within(
        conn.sender()
            .send(tool(2, "sleep", json!({"ms": 600_000})).into()),
    )
    .await
    .unwrap();
    let target = rustix::process::Pid::from_raw(pid).unwrap();
    rustix::process::kill_process(target, rustix::process::Signal::KILL).unwrap();
    // Well before the sleep's ten minutes or the request timeout's five: `within` bounds it.
    let (response, _) = response_to(&mut conn, &2.into()).await;
    assert_eq!(error_message(&response), "the stdio server exited");
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_sessions_dropped_without_delete_leave_no_child_after_the_idle_timeout() {
    let config = Config::default()
        .idle_timeout(Duration::from_secs(1))
        .max_sessions(200);
    let gateway = Running::start(child("normal"), options(), config).await;
    let addr = gateway
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut started = 0;
    for batch in 0..20 {
        let mut tasks = Vec::new();
        for i in 0..10 {
            let addr = addr.clone();
            tasks.push(tokio::spawn(async move {
                raw_initialize(&addr, batch * 10 + i).await
            }));
        }
        for task in tasks {
            assert!(
                within(task).await.unwrap(),
                "an initialize was not answered"
            );
            started += 1;
        }
    }
    assert_eq!(started, 200);
    // Only the pool's child is left once every session went idle.
    until(|| gateway.gateway.children() <= 1).await;
    gateway.shutdown().await;
}

/// An `initialize` POST on a connection of its own, never followed by anything (no DELETE);
/// whether it was answered with a session id and the child's result.
async fn raw_initialize(addr: &str, n: usize) -> bool {
    let body = json!({"jsonrpc": "2.0", "id": n, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"},
    }})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    // Bounded: the reply ends with the response, and the connection closes.
    (&mut stream)
        .take(1 << 20)
        .read_to_end(&mut reply)
        .await
        .unwrap();
    let reply = String::from_utf8_lossy(&reply).to_ascii_lowercase();
    reply.contains("mcp-session-id:") && reply.contains("test-child")
}
