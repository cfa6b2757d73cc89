//! S18 and S22: whatever a client did with its streams, once they are over the session is idle
//! again (so the cap can evict it and the reaper end it) and holds no buffered bytes. Each
//! scenario runs in a service capped at one session: a new `initialize` succeeds only by
//! evicting the first session, which it can only do if that session is idle.

use std::time::Duration;

use http::StatusCode;
use http_body_util::BodyExt;
use mcp_streamable_server::{Config, InMemoryEventStore, StreamableHttpService};
use serde_json::json;

use crate::harness::*;
use crate::lifecycle::settle;

async fn after(
    config: Config,
    version: &str,
    scenario: impl AsyncFnOnce(StreamableHttpService, String),
) {
    let service = service(config.max_sessions(1));
    let sid = initialize(&service, version).await;
    scenario(service.clone(), sid.clone()).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(service.buffered_bytes(), 0, "buffered bytes left behind");
    let response = service
        .handle(request(post(None), initialize_body(0, version)))
        .await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the first session should be idle, and evicted"
    );
    let response = service.handle(request(post(Some(&sid)), ping(1))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

fn store() -> Config {
    Config::default().event_store(InMemoryEventStore::default())
}

#[tokio::test(start_paused = true)]
async fn s18_a_request_read_to_the_end() {
    after(Config::default(), "2025-06-18", async |service, sid| {
        call_tool(&service, &sid, 1, "progress", json!({"steps": 3})).await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn s18_a_post_dropped_before_its_response() {
    for config in [Config::default(), store()] {
        after(config, "2025-11-25", async |service, sid| {
            let response = service
                .handle(request(
                    post(Some(&sid)),
                    call(1, "progress", json!({"steps": 3, "delay_ms": 10})),
                ))
                .await;
            let mut sse = Sse::new(response);
            sse.frame_within(WAIT).await;
            drop(sse);
            // Not even polled once.
            let response = service
                .handle(request(
                    post(Some(&sid)),
                    call(2, "sleep", json!({"ms": 10})),
                ))
                .await;
            drop(response);
        })
        .await;
    }
}

#[tokio::test(start_paused = true)]
async fn s18_a_get_dropped_taken_over_and_resumed() {
    after(store(), "2025-11-25", async |service, sid| {
        let first = service.handle(get(&sid, None)).await;
        let second = service.handle(get(&sid, None)).await;
        call_tool(&service, &sid, 1, "broadcast", json!({"count": 2})).await;
        let mut second = Sse::new(second);
        second.next().await.unwrap();
        let id = second.last_event_id().to_owned();
        let resumed = service.handle(get(&sid, Some(&id))).await;
        let mut first = Sse::new(first);
        assert!(first.ends().await);
        // What it had taken before the takeover, then the end.
        assert!(second.rest(10).await.len() <= 1);
        drop(resumed);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn s18_json_mode_answers_json_and_sse() {
    after(
        Config::default().json_response(true),
        "2025-06-18",
        async |service, sid| {
            let response = service.handle(request(post(Some(&sid)), ping(1))).await;
            body_bytes(response).await;
            let response = service
                .handle(request(
                    post(Some(&sid)),
                    call(2, "progress", json!({"steps": 2})),
                ))
                .await;
            sse_events(response, 10).await;
            // A JSON waiter whose client goes away.
            let waiting = service.handle(request(
                post(Some(&sid)),
                call(3, "sleep", json!({"ms": 100})),
            ));
            assert!(
                tokio::time::timeout(Duration::from_millis(10), waiting)
                    .await
                    .is_err()
            );
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn s18_polling_and_resuming_a_finished_stream() {
    after(store(), "2025-11-25", async |service, sid| {
        let response = service
            .handle(request(
                post(Some(&sid)),
                call(1, "poll", json!({"before": 1, "after": 2})),
            ))
            .await;
        let mut sse = Sse::new(response);
        let mut got: Vec<String> = messages(&sse.rest(10).await).iter().map(label).collect();
        let id = sse.last_event_id().to_owned();
        // After the request is over: replay, then the end.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let response = service.handle(get(&sid, Some(&id))).await;
        got.extend(messages(&sse_events(response, 10).await).iter().map(label));
        assert_eq!(got, ["p1", "p2", "p3", "r1"]);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn s18_a_slow_reader_shed_for_its_backlog() {
    let config = Config::default().max_buffered_bytes(10_000);
    after(config, "2025-06-18", async |service, sid| {
        let mut standalone = service.handle(get(&sid, None)).await.into_body();
        standalone.frame().await;
        call_tool(
            &service,
            &sid,
            1,
            "flood",
            json!({"count": 100, "bytes": 500}),
        )
        .await;
        // Shed: the body ends after what it had taken.
        let mut frames = 0;
        while let Some(frame) = tokio::time::timeout(WAIT, standalone.frame())
            .await
            .unwrap()
        {
            frame.unwrap();
            frames += 1;
            assert!(frames < 1000);
        }
        // What came meanwhile waits for the next GET, which reads it to a marker.
        call_tool(&service, &sid, 2, "broadcast", json!({"text": "end"})).await;
        let mut next = Sse::new(service.handle(get(&sid, None)).await);
        for n in 0.. {
            assert!(n < 1000);
            if params_of(&message(&next.next().await.unwrap()))["data"] == "end" {
                break;
            }
        }
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn s18_refused_requests() {
    after(Config::default(), "2025-06-18", async |service, sid| {
        let first = service
            .handle(request(
                post(Some(&sid)),
                call(1, "sleep", json!({"ms": 50})),
            ))
            .await;
        let duplicate = service.handle(request(post(Some(&sid)), ping(1))).await;
        assert_eq!(duplicate.status(), StatusCode::BAD_REQUEST);
        let bad = service.handle(request(post(Some(&sid)), "{not json")).await;
        assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
        sse_events(first, 10).await;
    })
    .await;
}
