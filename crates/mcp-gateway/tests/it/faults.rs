//! Children that fail: each turns into JSON-RPC errors and an ended session, never a hang,
//! never the gateway's death. (Sessions dropped without DELETE: `tests/memory.rs`.)

use std::time::Duration;

use mcp_gateway::Command;
use mcp_jsonrpc::code;
use mcp_streamable_client::Family;
use mcp_streamable_server::Config;
use mcp_transport::{Connection, Sender};
use serde_json::json;

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
