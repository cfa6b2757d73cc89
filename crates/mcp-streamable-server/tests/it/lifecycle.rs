//! S15, S16, S18, S23: stream headers and keep-alive, DELETE, idle timeout and the session cap,
//! graceful shutdown. Time-dependent tests run on paused time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::StatusCode;
use mcp_streamable_server::{Config, InMemoryEventStore, StreamableHttpService};
use serde_json::json;
use tokio::time::Instant;

use crate::harness::*;

/// The test app, counting the sessions that have started and ended (their `recv` gave `None`).
pub(crate) fn counting(
    config: Config,
) -> (StreamableHttpService, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let ended = Arc::new(AtomicUsize::new(0));
    let (s, e) = (Arc::clone(&started), Arc::clone(&ended));
    let service = service_with(config, move |conn, parts| {
        s.fetch_add(1, Ordering::SeqCst);
        let e = Arc::clone(&e);
        async move {
            crate::app::session(conn, parts).await;
            e.fetch_add(1, Ordering::SeqCst);
        }
    });
    (service, started, ended)
}

/// Lets spawned tasks run (current-thread runtime): bounded, no time passes.
pub(crate) async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn s15_sse_responses_carry_the_headers_proxies_need() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let post = service.handle(request(post(Some(&sid)), ping(1))).await;
    let get = service.handle(get(&sid, None)).await;
    for response in [post, get] {
        let h = response.headers();
        assert_eq!(h["content-type"], "text/event-stream");
        assert_eq!(h["cache-control"], "no-cache, no-transform");
        assert_eq!(h["x-accel-buffering"], "no");
    }
}

#[tokio::test]
async fn s15_a_get_writes_a_comment_at_once() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let mut sse = Sse::new(service.handle(get(&sid, None)).await);
    // Zero time: the frame must be ready at the first poll.
    let frame = sse.frame_within(Duration::ZERO).await.unwrap();
    assert!(frame.starts_with(b":"), "{frame:?}");
}

/// The head of an SSE reply waits a moment for the answer: a quick answer leaves with it, and
/// with the priming event, in one frame (one write, where it took two); a slow one does not
/// hold the head, which leaves with the priming event alone.
#[tokio::test(start_paused = true)]
async fn s14_s15_a_quick_answer_leaves_with_the_head_and_a_slow_one_does_not_hold_it() {
    let service = service(Config::default().event_store(InMemoryEventStore::default()));
    let sid = initialize(&service, "2025-11-25").await;
    let response = service.handle(request(post(Some(&sid)), ping(1))).await;
    let mut sse = Sse::new(response);
    let first = sse.frame_within(Duration::ZERO).await.unwrap();
    let text = String::from_utf8_lossy(&first);
    let priming = text.find("_0\n").expect("the priming event");
    let answer = text.find(r#""id":1"#).expect("the answer");
    assert!(priming < answer, "{text:?}");
    assert!(
        sse.next()
            .await
            .is_some_and(|e| e.data.contains(r#""id":1"#))
    );
    assert!(sse.ends().await);

    let start = Instant::now();
    let slow = call(2, "sleep", json!({"ms": 10_000}));
    let response = service.handle(request(post(Some(&sid)), slow)).await;
    assert!(
        start.elapsed() < Duration::from_millis(50),
        "{:?}",
        start.elapsed()
    );
    let mut sse = Sse::new(response);
    let first = sse.frame_within(Duration::ZERO).await.unwrap();
    let text = String::from_utf8_lossy(&first);
    assert!(
        text.contains("_0\n") && !text.contains(r#""id":2"#),
        "{text:?}"
    );
    let answer = sse.next().await.expect("the answer, later");
    assert!(answer.data.contains(r#""id":2"#), "{answer:?}");
    assert!(start.elapsed() >= Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn s15_idle_streams_get_a_keep_alive_comment_every_15_s() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    standalone.frame_within(Duration::ZERO).await.unwrap();
    // The clock of a stream starts with it, before its head leaves (which waits a moment
    // for an answer that may come at once).
    let start = Instant::now();
    let post = service
        .handle(request(
            post(Some(&sid)),
            call(1, "sleep", json!({"ms": 40_000})),
        ))
        .await;
    let mut post = Sse::new(post);
    for n in 1..=2u64 {
        for sse in [&mut standalone, &mut post] {
            let frame = sse.frame_within(Duration::from_secs(16)).await.unwrap();
            assert_eq!(&frame[..], b": keep-alive\n\n");
        }
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_secs(15 * n) && elapsed < Duration::from_secs(15 * n + 1),
            "{elapsed:?}"
        );
    }
    // A message resets the clock; the response comes at 40 s.
    let msgs = messages(&post.rest(10).await);
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
}

#[tokio::test(start_paused = true)]
async fn s15_the_keep_alive_period_is_configurable() {
    let service = service(Config::default().keep_alive(Some(Duration::from_secs(5))));
    let sid = initialize(&service, "2025-06-18").await;
    let mut sse = Sse::new(service.handle(get(&sid, None)).await);
    sse.frame_within(Duration::ZERO).await.unwrap();
    let start = Instant::now();
    let frame = sse.frame_within(Duration::from_secs(6)).await.unwrap();
    assert_eq!(&frame[..], b": keep-alive\n\n");
    assert!(start.elapsed() >= Duration::from_secs(5));

    let service = crate::harness::service(Config::default().keep_alive(None));
    let sid = initialize(&service, "2025-06-18").await;
    let response = service.handle(get(&sid, None)).await;
    let mut body = response.into_body();
    use http_body_util::BodyExt;
    body.frame().await.unwrap().unwrap();
    assert!(
        tokio::time::timeout(Duration::from_secs(120), body.frame())
            .await
            .is_err(),
        "no keep-alive when turned off"
    );
}

#[tokio::test(start_paused = true)]
async fn s16_delete_ends_the_session_its_streams_and_its_stored_events() {
    let store = InMemoryEventStore::default();
    let (service, _, ended) = counting(Config::default().event_store(store.clone()));
    let sid = initialize(&service, "2025-11-25").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    call_tool(&service, &sid, 1, "progress", json!({"steps": 3})).await;
    let mut in_flight = Sse::new(
        service
            .handle(request(
                post(Some(&sid)),
                call(2, "sleep", json!({"ms": 60_000})),
            ))
            .await,
    );
    in_flight.frame_within(WAIT).await.unwrap();
    assert!(store.retained_bytes() > 0);

    let response = service.handle(delete(&sid)).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(body_bytes(response).await.is_empty());
    assert!(standalone.ends().await, "the GET stream ends");
    assert!(in_flight.ends().await, "the request stream ends");
    settle().await;
    assert_eq!(ended.load(Ordering::SeqCst), 1, "the app's recv saw None");
    assert_eq!(service.session_count(), 0);
    assert_eq!(store.retained_bytes(), 0);
    assert_eq!(store.session_count(), 0);
    assert_eq!(service.buffered_bytes(), 0);
    let response = service.handle(request(post(Some(&sid)), ping(3))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn s18_sessions_end_after_the_idle_timeout() {
    let store = InMemoryEventStore::default();
    let config = Config::default()
        .idle_timeout(Duration::from_secs(60))
        .event_store(store.clone());
    let (service, _, ended) = counting(config);
    let sid = initialize(&service, "2025-11-25").await;
    call_tool(&service, &sid, 1, "progress", json!({"steps": 2})).await;
    tokio::time::sleep(Duration::from_secs(50)).await;
    assert_eq!(service.session_count(), 1, "not idle long enough yet");
    // Activity restarts the clock.
    call_tool(&service, &sid, 2, "echo", json!({})).await;
    tokio::time::sleep(Duration::from_secs(50)).await;
    assert_eq!(service.session_count(), 1);
    tokio::time::sleep(Duration::from_secs(30)).await;
    settle().await;
    assert_eq!(service.session_count(), 0);
    assert_eq!(ended.load(Ordering::SeqCst), 1, "the app's recv saw None");
    assert_eq!(store.retained_bytes(), 0);
    let response = service.handle(request(post(Some(&sid)), ping(3))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn s18_open_streams_and_requests_in_flight_count_as_activity() {
    let config = Config::default().idle_timeout(Duration::from_secs(60));
    let (service, _, ended) = counting(config);
    let with_get = initialize(&service, "2025-06-18").await;
    let _standalone = service.handle(get(&with_get, None)).await;
    let with_request = initialize(&service, "2025-06-18").await;
    let in_flight = service
        .handle(request(
            post(Some(&with_request)),
            call(1, "sleep", json!({"ms": 300_000})),
        ))
        .await;
    tokio::time::sleep(Duration::from_secs(290)).await;
    assert_eq!(service.session_count(), 2);
    // The request ends; its session is idle from then on.
    let msgs = messages(&sse_events(in_flight, 10).await);
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    tokio::time::sleep(Duration::from_secs(90)).await;
    settle().await;
    assert_eq!(service.session_count(), 1);
    assert_eq!(ended.load(Ordering::SeqCst), 1);
    let response = service
        .handle(request(post(Some(&with_get)), ping(2)))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn s18_the_cap_evicts_the_least_recently_used_idle_session() {
    let (service, _, ended) = counting(Config::default().max_sessions(3));
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(initialize(&service, "2025-06-18").await);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // The oldest is used again: the second is now the least recently used.
    call_tool(&service, &ids[0], 1, "echo", json!({})).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let newest = initialize(&service, "2025-06-18").await;
    settle().await;
    assert_eq!(service.session_count(), 3);
    assert_eq!(ended.load(Ordering::SeqCst), 1);
    let response = service.handle(request(post(Some(&ids[1])), ping(2))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    for sid in [&ids[0], &ids[2], &newest] {
        assert_eq!(
            call_tool(&service, sid, 3, "echo", json!({})).await.len(),
            1
        );
    }
}

#[tokio::test(start_paused = true)]
async fn s18_503_with_retry_after_when_no_session_is_idle() {
    let service = service(Config::default().max_sessions(2));
    let a = initialize(&service, "2025-06-18").await;
    let b = initialize(&service, "2025-06-18").await;
    let _busy_a = service.handle(get(&a, None)).await;
    let _busy_b = service
        .handle(request(
            post(Some(&b)),
            call(1, "sleep", json!({"ms": 60_000})),
        ))
        .await;
    let response = service
        .handle(request(post(None), initialize_body(0, "2025-06-18")))
        .await;
    assert!(response.headers().contains_key("retry-after"));
    let (_, _, message) = refusal(response, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(message.contains("too many sessions"), "{message}");
    assert_eq!(service.session_count(), 2);
}

#[tokio::test]
async fn s18_nothing_is_registered_before_the_request_is_validated() {
    let (service, started, _) = counting(Config::default().max_body_bytes(1000));
    let init = initialize_body(0, "2025-06-18");
    let bad = [
        request(with(post(None), "accept", "text/html"), init.clone()),
        request(with(post(None), "accept", "application/json"), init.clone()),
        request(with(post(None), "content-type", "text/plain"), init.clone()),
        request(
            post(None).header("mcp-protocol-version", "1.0"),
            init.clone(),
        ),
        request(post(None), format!("[{init}]")),
        request(post(None), format!("{init:1001}")),
        request(
            post(None),
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"",
        ),
        request(
            post(None).header("origin", "http://evil.example"),
            init.clone(),
        ),
    ];
    for req in bad {
        let response = service.handle(req).await;
        assert!(response.status().is_client_error(), "{}", response.status());
    }
    settle().await;
    assert_eq!(service.session_count(), 0);
    assert_eq!(
        started.load(Ordering::SeqCst),
        0,
        "no application was started"
    );
}
