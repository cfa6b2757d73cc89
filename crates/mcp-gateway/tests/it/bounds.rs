//! The children's bounds: the session cap (an evicted session's child is stopped), and a pool
//! child that died, replaced for later requests rather than restarted under a session.

use mcp_streamable_client::Family;
use mcp_streamable_server::{Config, Families};
use mcp_transport::{Connection, Sender};
use serde_json::json;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cap_bounds_the_children() {
    let config = Config::default().max_sessions(2);
    let gateway = Running::start(child("normal"), options(), config).await;
    let (mut first, _) = session(&gateway.url).await;
    let ended = child_pid(&mut first, 1).await;
    let (mut second, _) = session(&gateway.url).await;
    let kept = child_pid(&mut second, 1).await;
    // At the cap, with both sessions busy (their GET streams open), a third is refused before
    // any child is started for it.
    let over = connect(&gateway.url, Family::Session).await;
    let refused = within(over.sender().send(initialize_request().into())).await;
    assert!(refused.is_err(), "a third session at a cap of two");
    assert!(
        gateway.gateway.children() <= 3,
        "two sessions and the pool's child"
    );
    // A session that ends makes room, and its child goes.
    within(first.close()).await.unwrap();
    until(|| !alive(ended)).await;
    let (mut third, _) = session(&gateway.url).await;
    let newest = child_pid(&mut third, 1).await;
    assert!(alive(kept) && alive(newest));
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_child_that_died_is_replaced_for_later_requests() {
    let gateway = Running::child("normal").await;
    let mut conn = connect(&gateway.url, Family::PerRequest).await;
    let dead = child_pid(&mut conn, 1).await;
    let target = rustix::process::Pid::from_raw(dead).unwrap();
    rustix::process::kill_process(target, rustix::process::Signal::KILL).unwrap();
    until(|| !alive(dead)).await;
    // A request racing the gateway's finding out may get the dead child's error; at most a
    // few, then a new child answers.
    let mut replaced = None;
    for id in 2..40 {
        let (response, _) = ask(&mut conn, tool(id, "pid", json!({}))).await;
        if response.result().is_ok() {
            replaced = Some(text(&response).parse::<i32>().unwrap());
            break;
        }
        assert_eq!(error_message(&response), "the stdio server exited");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let replaced = replaced.expect("a new pool child answered");
    assert_ne!(replaced, dead);
    gateway.shutdown().await;
    assert!(!alive(replaced));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_of_the_session_family_only_warms_no_pool() {
    let config = Config::default().families(Families::SessionOnly);
    let gateway = Running::start(child("normal"), options(), config).await;
    let (mut conn, _) = session(&gateway.url).await;
    let pid = child_pid(&mut conn, 1).await;
    // By now a pool would have started: its children start with the service.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(gateway.gateway.children(), 1, "the session's child only");
    assert!(alive(pid));
    gateway.shutdown().await;
}
