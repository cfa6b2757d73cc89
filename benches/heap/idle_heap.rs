//! Where an idle session's memory goes (issue 32: at most 2.5 KiB a session): sessions opened
//! through the service in process, each `initialize` and `notifications/initialized` and then
//! nothing, served as `echo_server` serves them by default (its application, `echo_app`, and an
//! in-memory event store keeping each `initialize` answer for a client to resume). dhat's
//! global allocator counts the live heap before and after, and writes `dhat-heap.json`, whose
//! program points' bytes at the end say which allocation holds what.
//!
//! ```text
//! cargo run --release -p benches --example idle_heap [SESSIONS]
//! ```
//!
//! It prints the live bytes and blocks per session. The process's resident memory per session
//! (the load suite's figure) is these bytes plus the allocator's own: a header per block, and
//! the rounding of each block to the allocator's sizes.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_streamable_server::{Config, InMemoryEventStore, StreamableHttpService};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

fn post(session: Option<&str>, body: String) -> http::Request<Full<Bytes>> {
    let mut b = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(id) = session {
        b = b.header("mcp-session-id", id);
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

/// Opens `n` sessions, each left idle after `notifications/initialized`.
async fn open(service: &StreamableHttpService, n: usize) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcp-load", "version": "0.1.0"}}})
    .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    for _ in 0..n {
        let response = service.handle(post(None, init.clone())).await;
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        response.into_body().collect().await.unwrap();
        let response = service
            .handle(post(Some(&session), initialized.clone()))
            .await;
        response.into_body().collect().await.unwrap();
    }
}

/// Lets the sessions' tasks run until nothing is left to do, bounded.
async fn settle() {
    for _ in 0..1_000 {
        tokio::task::yield_now().await;
    }
}

fn main() {
    let sessions: usize = std::env::args()
        .nth(1)
        .map_or(2_000, |n| n.parse().expect("SESSIONS, a number"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let profiler = dhat::Profiler::new_heap();
    runtime.block_on(async {
        let config = Config::default().event_store(InMemoryEventStore::default());
        let service = StreamableHttpService::new(config, support::echo_app::session);
        // A first session grows what the runtime and the service grow once.
        open(&service, 1).await;
        settle().await;
        let before = dhat::HeapStats::get();
        open(&service, sessions).await;
        settle().await;
        let after = dhat::HeapStats::get();
        assert_eq!(service.session_count(), sessions + 1);
        let bytes = after.curr_bytes - before.curr_bytes;
        let blocks = after.curr_blocks - before.curr_blocks;
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        let per = |x: usize| x as f64 / sessions as f64;
        println!(
            "{sessions} idle sessions: {:.0} live bytes and {:.1} blocks each",
            per(bytes),
            per(blocks)
        );
        // The sessions are still open when the profile is written: its program points' bytes
        // at the end are what they hold.
        drop(profiler);
        std::mem::forget(service);
    });
}
