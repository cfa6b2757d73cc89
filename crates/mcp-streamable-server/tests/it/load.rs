//! Load: many sessions at once over loopback, and what is left of them afterwards (S16, S18,
//! S22).

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use mcp_streamable_server::{Config, InMemoryEventStore};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::harness::{self, call, initialize_body, message, note, result_of};
use crate::tcp::{self, Sse};

const SESSIONS: usize = 1_000;
const REQUESTS: usize = 10;
const IN_FLIGHT: usize = 64;

/// One client session: initialize, `REQUESTS` echo calls checked for their own answer, DELETE.
async fn run_session(client: tcp::HttpClient, uri: String, n: usize) {
    let response = client
        .request(tcp::post(&uri, None, initialize_body(0, "2025-11-25")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let sid = harness::session_id(response.headers()).unwrap();
    tcp::body_bytes(response).await;
    let response = client
        .request(tcp::post(
            &uri,
            Some(&sid),
            note("notifications/initialized"),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    tcp::body_bytes(response).await;
    for r in 0..REQUESTS {
        let id = (n * 100 + r) as i64;
        let text = format!("session {n} request {r}");
        let response = client
            .request(tcp::post(
                &uri,
                Some(&sid),
                call(id, "echo", json!({"text": text})),
            ))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut sse = Sse::new(response);
        let m = message(&sse.next().await.expect("a response"));
        assert_eq!(harness::response_id(&m), Some(mcp_jsonrpc::Id::from(id)));
        assert_eq!(result_of(&m), crate::app::text(&text), "misrouted");
        assert!(sse.next().await.is_none(), "one message per request");
    }
    let response = client.request(tcp::delete(&uri, &sid)).await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s18_load_1000_sessions_of_10_requests_over_loopback() {
    let store = InMemoryEventStore::default();
    let service = harness::service(Config::default().event_store(store.clone()));
    let server = tcp::serve(service.clone()).await;
    let client = tcp::client();
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    let started = std::time::Instant::now();
    let mut tasks = JoinSet::new();
    for n in 0..SESSIONS {
        let permit = Arc::clone(&permits).acquire_owned().await.unwrap();
        let (client, uri) = (client.clone(), server.uri());
        tasks.spawn(async move {
            run_session(client, uri, n).await;
            drop(permit);
        });
    }
    let mut done = 0;
    while let Some(result) = tokio::time::timeout(Duration::from_secs(60), tasks.join_next())
        .await
        .expect("the load finishes within a minute")
    {
        result.unwrap();
        done += 1;
    }
    assert_eq!(done, SESSIONS);
    eprintln!(
        "{SESSIONS} sessions x {REQUESTS} requests in {:?}",
        started.elapsed()
    );
    assert_eq!(service.session_count(), 0);
    assert_eq!(service.buffered_bytes(), 0);
    // A DELETE may return before the store has been told; give it a moment, bounded.
    for _ in 0..100 {
        if store.session_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(store.session_count(), 0);
    assert_eq!(store.retained_bytes(), 0);
}

#[tokio::test(start_paused = true)]
async fn s18_after_the_idle_timeout_no_session_and_no_event_is_left() {
    const N: usize = 200;
    let store = InMemoryEventStore::default();
    let config = Config::default()
        .idle_timeout(Duration::from_secs(600))
        .event_store(store.clone());
    let service = harness::service(config);
    for n in 0..N {
        let sid = harness::initialize(&service, "2025-11-25").await;
        let msgs =
            harness::call_tool(&service, &sid, n as i64, "progress", json!({"steps": 3})).await;
        assert_eq!(msgs.len(), 4);
        // Every tenth leaves a GET stream behind, closed by its client.
        if n % 10 == 0 {
            drop(service.handle(harness::get(&sid, None)).await);
        }
    }
    assert_eq!(service.session_count(), N);
    assert_eq!(store.session_count(), N);
    assert!(store.retained_bytes() > 0);
    tokio::time::sleep(Duration::from_secs(600 + 151)).await;
    crate::lifecycle::settle().await;
    assert_eq!(service.session_count(), 0);
    assert_eq!(store.session_count(), 0);
    assert_eq!(store.retained_bytes(), 0);
}
