//! Sessions dropped without DELETE (issue 33's fault list): once the idle timeout ended them,
//! no child is left and the gateway's heap is back to what it was before them. A test binary of
//! its own, since it counts the live heap with a global allocator (dhat's, in its testing
//! mode); the gateway runs in process, as the `it` tests serve it.

use std::time::Duration;

use mcp_streamable_server::Config;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

// The `it` binary's harness: this test uses part of it.
#[allow(dead_code)]
#[path = "it/harness.rs"]
mod harness;

use harness::{Running, child, options, until, within};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Sessions started and dropped.
const SESSIONS: usize = 200;

/// What may stay of them, on average a session: room for the capacity a map or the runtime
/// keeps once grown (the first round grew most of it already). 960 bytes in all stayed when
/// this was written.
const KEPT_PER_SESSION: u64 = 64;

/// The bytes live on the heap now, once the gateway's tasks have settled: read until two reads
/// a moment apart agree (bounded).
async fn live_bytes() -> u64 {
    let mut last = dhat::HeapStats::get().curr_bytes;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = dhat::HeapStats::get().curr_bytes;
        if now == last {
            break;
        }
        last = now;
    }
    last as u64
}

/// `count` sessions started, ten at a time, each on a connection of its own, then dropped.
async fn start_and_drop(addr: &str, count: usize) {
    for batch in 0..count / 10 {
        let mut tasks = Vec::new();
        for i in 0..10 {
            let addr = addr.to_owned();
            tasks.push(tokio::spawn(async move {
                raw_initialize(&addr, batch * 10 + i).await
            }));
        }
        for task in tasks {
            assert!(
                within(task).await.unwrap(),
                "an initialize was not answered"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_sessions_dropped_without_delete_leave_no_child_and_no_memory() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let config = Config::default()
        .idle_timeout(Duration::from_secs(1))
        .max_sessions(SESSIONS);
    let gateway = Running::start(child("normal"), options(), config).await;
    let addr = gateway
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // A first round grows what grows once (the runtime's, the maps'), then the baseline.
    start_and_drop(&addr, 20).await;
    until(|| gateway.gateway.children() <= 1).await;
    let baseline = live_bytes().await;

    start_and_drop(&addr, SESSIONS).await;
    // The last ten, answered a moment ago, are alive still (the others may have idled out).
    let held = dhat::HeapStats::get().curr_bytes as u64;
    // Only the pool's child is left once every session went idle.
    until(|| gateway.gateway.children() <= 1).await;
    let after = live_bytes().await;
    let grown = held.saturating_sub(baseline);
    let kept = after.saturating_sub(baseline);
    let sessions = SESSIONS as u64;
    assert!(
        grown > 0 && kept <= sessions * KEPT_PER_SESSION,
        "the last sessions held {grown} bytes over the baseline of {baseline}; {kept} \
         stayed after they ended (at most {KEPT_PER_SESSION} a session may)"
    );
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
