//! S23: graceful shutdown.

use std::sync::atomic::Ordering;
use std::time::Duration;

use http::StatusCode;
use mcp_streamable_server::Config;
use serde_json::json;
use tokio::time::Instant;

use crate::harness::*;
use crate::lifecycle::{counting, settle};

#[tokio::test(start_paused = true)]
async fn s23_shutdown_refuses_sessions_ends_streams_and_gives_requests_a_deadline() {
    let (service, _, ended) = counting(Config::default());
    let a = initialize(&service, "2025-06-18").await;
    let b = initialize(&service, "2025-06-18").await;
    let mut standalone = Sse::new(service.handle(get(&a, None)).await);
    standalone.frame_within(WAIT).await.unwrap();
    let quick = service
        .handle(request(
            post(Some(&a)),
            call(1, "sleep", json!({"ms": 2_000})),
        ))
        .await;
    let slow = service
        .handle(request(
            post(Some(&b)),
            call(2, "sleep", json!({"ms": 60_000})),
        ))
        .await;

    let start = Instant::now();
    let shutdown = tokio::spawn({
        let service = service.clone();
        async move { service.shutdown(Duration::from_secs(10)).await }
    });
    settle().await;
    // No new session, and no new standalone stream for a client that reconnects.
    let response = service
        .handle(request(post(None), initialize_body(0, "2025-06-18")))
        .await;
    assert!(response.headers().contains_key("retry-after"));
    let (_, _, message) = refusal(response, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(message.contains("shutting down"), "{message}");
    let response = service.handle(get(&a, None)).await;
    refusal(response, StatusCode::SERVICE_UNAVAILABLE).await;
    // The standalone stream ends at once.
    assert!(standalone.ends().await);
    assert!(start.elapsed() < Duration::from_secs(1));
    // The quick request finishes within the grace.
    let msgs = messages(&sse_events(quick, 10).await);
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    // The slow one does not: its stream ends at the deadline.
    let msgs = messages(&sse_events(slow, 10).await);
    assert!(msgs.is_empty(), "{msgs:?}");
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_secs(10) && elapsed < Duration::from_secs(11),
        "{elapsed:?}"
    );
    tokio::time::timeout(WAIT, shutdown).await.unwrap().unwrap();
    settle().await;
    assert_eq!(service.session_count(), 0);
    assert_eq!(ended.load(Ordering::SeqCst), 2);
    let response = service.handle(request(post(Some(&a)), ping(3))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn s23_shutdown_with_nothing_in_flight_returns_at_once() {
    let (service, _, ended) = counting(Config::default());
    let a = initialize(&service, "2025-06-18").await;
    let _standalone = service.handle(get(&a, None)).await;
    let start = Instant::now();
    service.shutdown(Duration::from_secs(60)).await;
    assert!(start.elapsed() < Duration::from_secs(1));
    settle().await;
    assert_eq!(service.session_count(), 0);
    assert_eq!(ended.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn s23_stateless_shutdown_gives_posts_in_flight_a_deadline() {
    let (service, _, ended) = counting(Config::default().stateless());
    let quick = service
        .handle(request(post(None), call(1, "sleep", json!({"ms": 2_000}))))
        .await;
    let slow = service
        .handle(request(post(None), call(2, "sleep", json!({"ms": 60_000}))))
        .await;
    let start = Instant::now();
    let shutdown = tokio::spawn({
        let service = service.clone();
        async move { service.shutdown(Duration::from_secs(10)).await }
    });
    settle().await;
    let response = service.handle(request(post(None), ping(3))).await;
    refusal(response, StatusCode::SERVICE_UNAVAILABLE).await;
    let msgs = messages(&sse_events(quick, 10).await);
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    assert!(!shutdown.is_finished(), "one POST is still in flight");
    let msgs = messages(&sse_events(slow, 10).await);
    assert!(msgs.is_empty(), "{msgs:?}");
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_secs(10) && elapsed < Duration::from_secs(11),
        "{elapsed:?}"
    );
    tokio::time::timeout(WAIT, shutdown).await.unwrap().unwrap();
    settle().await;
    assert_eq!(ended.load(Ordering::SeqCst), 2);
}
