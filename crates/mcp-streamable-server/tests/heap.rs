//! The live heap after sessions end returns to where it was (S22), by the allocator's own
//! count rather than resident memory: the server kept 558 MB resident after 200
//! sessions with 1 MiB backlogs were deleted, which was glibc keeping freed pages, not a leak.
//! This pins the "not a leak" half. Its own test binary: a counting global allocator sees
//! every allocation of the process (dhat's, in its testing mode).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_jsonrpc::{Message, Notification, Response};
use mcp_streamable_server::{Config, InMemoryEventStore, ServerConnection, StreamableHttpService};
use mcp_transport::{Connection, Sender};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// The bytes the process holds on the heap, by dhat's count.
fn live() -> isize {
    isize::try_from(dhat::HeapStats::get().curr_bytes).unwrap_or(isize::MAX)
}

/// Answers `initialize`; for any other request, sends 120 notifications of 10 KiB that go to
/// the standalone stream (1.2 MiB, past the session's budget), then answers.
async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    let pad = "x".repeat(10 * 1024);
    while let Ok(Some(message)) = conn.recv().await {
        let Message::Request(request) = message else {
            continue;
        };
        if request.method != "initialize" {
            for i in 0..120 {
                let params = mcp_jsonrpc::to_raw_value(&json!({"i": i, "pad": pad})).unwrap();
                let note = Notification::new("notifications/message", Some(params));
                let _ = sender.send(note.into()).await;
            }
        }
        let result = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "heap", "version": "0"}});
        let result = mcp_jsonrpc::to_raw_value(&result).unwrap();
        let _ = sender
            .send(Response::success(request.id, result).into())
            .await;
    }
}

fn request(
    method: http::Method,
    session: Option<&str>,
    body: String,
) -> http::Request<Full<Bytes>> {
    let mut b = http::Request::builder()
        .method(method)
        .uri("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(id) = session {
        b = b.header("mcp-session-id", id);
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

/// `n` sessions, each with a standalone GET that never reads and a 1.2 MiB flood queued for it;
/// then every session deleted and every GET dropped.
async fn cycle(service: &StreamableHttpService, n: usize) {
    let mut open = Vec::new();
    for _ in 0..n {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let response = service
            .handle(request(http::Method::POST, None, init.to_string()))
            .await;
        let sid = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        response.into_body().collect().await.unwrap();
        let get = service
            .handle(request(http::Method::GET, Some(&sid), String::new()))
            .await;
        let flood =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "flood"}});
        let response = service
            .handle(request(http::Method::POST, Some(&sid), flood.to_string()))
            .await;
        response.into_body().collect().await.unwrap();
        open.push((sid, get));
    }
    assert!(
        service.buffered_bytes() > 0,
        "the floods are held for the GETs"
    );
    for (sid, get) in open {
        let response = service
            .handle(request(http::Method::DELETE, Some(&sid), String::new()))
            .await;
        assert!(response.status().is_success());
        drop(get);
    }
}

/// Lets the sessions' tasks see their ends and drop what they hold, bounded.
async fn settle(service: &StreamableHttpService, above: isize) {
    for _ in 0..10_000 {
        if service.session_count() == 0 && live() <= above {
            return;
        }
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn s22_the_live_heap_returns_to_its_baseline_after_sessions_with_backlogs_end() {
    let _profiler = dhat::Profiler::builder().testing().build();
    const SESSIONS: usize = 10;
    const SLACK: isize = 4 * 1024;
    for store in [false, true] {
        let mut config = Config::default().max_buffered_bytes(1 << 20);
        if store {
            config = config.event_store(InMemoryEventStore::default());
        }
        let service = StreamableHttpService::new(config, app);
        // One cycle of the same size first: what the runtime and the service grow once
        // (task slabs, maps' capacity) is part of the baseline.
        cycle(&service, SESSIONS).await;
        settle(&service, 0).await;
        let baseline = live();
        for _ in 0..3 {
            cycle(&service, SESSIONS).await;
            settle(&service, baseline).await;
        }
        let after = live();
        assert_eq!(service.session_count(), 0);
        assert_eq!(service.buffered_bytes(), 0, "store {store}");
        assert!(
            after - baseline <= SLACK,
            "store {store}: {} bytes more live after 3 cycles of {SESSIONS} sessions than before",
            after - baseline
        );
    }
}
