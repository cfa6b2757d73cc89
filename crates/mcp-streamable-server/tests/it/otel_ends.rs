//! O4 (feature `otel`): how sessions end, by cause, and what resumption and shedding count.
//! Each scenario is the one the S and N rows pin without telemetry, recorded here into
//! OpenTelemetry's in-memory exporters.

use std::time::Duration;

use http::StatusCode;
use mcp_streamable_server::{Config, InMemoryEventStore, InMemoryNetwork, StreamableHttpService};
use serde_json::json;

use crate::harness::*;
use crate::otel::{recorded, recorded_node};

const ENDED: &str = "mcp.server.session.ended";

fn ended_by(cause: &str) -> Option<(&str, &str)> {
    Some(("mcp.session.end_reason", cause))
}

#[tokio::test(start_paused = true)]
async fn o4_a_session_idle_past_its_timeout_ends_as_idle() {
    let (recorded, telemetry) = recorded();
    let config = Config::default()
        .telemetry(telemetry)
        .idle_timeout(Duration::from_secs(60));
    let service = service(config);
    initialize(&service, "2025-11-25").await;
    tokio::time::sleep(Duration::from_secs(120)).await;
    crate::lifecycle::settle().await;
    assert_eq!(service.session_count(), 0);
    assert_eq!(recorded.total(ENDED, ended_by("idle")), 1);
    assert_eq!(recorded.total(ENDED, None), 1);
    assert_eq!(recorded.total("mcp.server.session.active", None), 0);
}

#[tokio::test]
async fn o4_a_session_evicted_at_the_cap_ends_as_evicted() {
    let (recorded, telemetry) = recorded();
    let service = service(Config::default().telemetry(telemetry).max_sessions(1));
    let first = initialize(&service, "2025-11-25").await;
    initialize(&service, "2025-11-25").await;
    let gone = service.handle(request(post(Some(&first)), ping(1))).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    assert_eq!(recorded.total(ENDED, ended_by("evicted")), 1);
    assert_eq!(recorded.total(ENDED, None), 1);
    assert_eq!(recorded.total("mcp.server.session.active", None), 1);
}

#[tokio::test]
async fn o4_sessions_ended_by_shutdown_end_as_shutdown() {
    let (recorded, telemetry) = recorded();
    let service = service(Config::default().telemetry(telemetry));
    initialize(&service, "2025-11-25").await;
    initialize(&service, "2025-06-18").await;
    service.shutdown(Duration::from_secs(1)).await;
    assert_eq!(recorded.total(ENDED, ended_by("shutdown")), 2);
    assert_eq!(recorded.total(ENDED, None), 2);
    assert_eq!(recorded.total("mcp.server.session.active", None), 0);
}

/// N8's lapse: the node whose copy another node took over ends it as `taken_over` once it is
/// back; the node that took it over counts one more live session.
#[tokio::test]
async fn o4_a_copy_another_node_took_over_ends_as_taken_over() {
    let network = InMemoryNetwork::default();
    let node = |name: &str| recorded_node(&network, name);
    let ((a, on_a), (b, on_b)) = (node("a"), node("b"));
    let sid = initialize(&a, "2025-11-25").await;
    network.lapse("a");
    call_tool(&b, &sid, 1, "progress", json!({"steps": 1})).await;
    assert_eq!(network.holder(&sid).as_deref(), Some("b"));
    network.renew("a");
    // Bounded: a steps down within a few of its lease's checks.
    for _ in 0..500 {
        if a.session_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(a.session_count(), 0);
    assert_eq!(on_a.total(ENDED, ended_by("taken_over")), 1);
    assert_eq!(on_a.total(ENDED, None), 1);
    assert_eq!(on_a.total("mcp.server.session.active", None), 0);
    assert_eq!(on_b.total("mcp.server.session.active", None), 1);
}

#[tokio::test]
async fn o4_a_resumed_stream_counts_itself_and_the_events_it_replayed() {
    let (recorded, telemetry) = recorded();
    let config = Config::default()
        .telemetry(telemetry)
        .event_store(InMemoryEventStore::default());
    let service = service(config);
    let sid = initialize(&service, "2025-06-18").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    let broadcast = |id, text| call(id, "broadcast", json!({"text": text, "count": 2}));
    let answer = service
        .handle(request(post(Some(&sid)), broadcast(1, "a")))
        .await;
    sse_events(answer, 10).await;
    standalone.next().await.unwrap();
    let after = standalone.last_event_id().to_owned();
    drop(standalone);
    let answer = service
        .handle(request(post(Some(&sid)), broadcast(2, "b")))
        .await;
    sse_events(answer, 10).await;
    // a1, b0 and b1 were sent after the event the client names.
    let response = service.handle(get(&sid, Some(&after))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut resumed = Sse::new(response);
    for _ in 0..3 {
        resumed.next().await.unwrap();
    }
    assert_eq!(recorded.total("mcp.server.stream.resumed", None), 1);
    assert_eq!(recorded.total("mcp.server.event.replayed", None), 3);
}

/// S22 without a store: what a reader too far behind loses is counted in bytes, and no more
/// than the session was sent.
#[tokio::test]
async fn o4_a_slow_readers_backlog_dropped_is_counted_as_bytes_shed() {
    const BUDGET: usize = 8 * 1024;
    let (recorded, telemetry) = recorded();
    let config = Config::default()
        .telemetry(telemetry)
        .max_buffered_bytes(BUDGET);
    let service: StreamableHttpService = service(config);
    let sid = initialize(&service, "2025-06-18").await;
    let mut slow = Sse::new(service.handle(get(&sid, None)).await);
    slow.frame_within(WAIT).await.unwrap();
    let flood = call(1, "flood", json!({"count": 200, "bytes": 100}));
    let answer = service.handle(request(post(Some(&sid)), flood)).await;
    sse_events(answer, 10).await;
    let mut read = 0;
    while slow.next().await.is_some() {
        read += 1;
        assert!(read <= 200);
    }
    assert!(read < 200, "disconnected before the end");
    let shed = recorded.total("mcp.server.buffer.shed", None);
    // Each notification carries its 100 bytes and its envelope: shed is more than the bytes
    // of the messages the reader missed, and less than the whole flood's with envelopes.
    let missed = i64::from((200 - read) * 100);
    assert!(shed >= missed, "shed {shed} < missed {missed}");
    assert!(shed < 200 * 1024, "shed {shed}");
}
