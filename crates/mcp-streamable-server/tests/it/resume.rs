//! S11, S13, S14: event ids, resumption with `Last-Event-ID`, priming events and polling.

use std::collections::HashSet;
use std::time::Duration;

use http::StatusCode;
use mcp_streamable_server::{Config, InMemoryEventStore, StreamableHttpService};
use serde_json::json;

use crate::harness::*;

fn with_store() -> Config {
    Config::default().event_store(InMemoryEventStore::default())
}

/// The `id:` fields of an SSE text, in order.
pub(crate) fn ids_in(raw: &str) -> Vec<String> {
    raw.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|v| v.strip_prefix(' ').unwrap_or(v).to_owned())
        .collect()
}

fn split_id(id: &str) -> (u64, u64) {
    let (s, i) = id.split_once('_').expect("<stream>_<index>");
    (s.parse().unwrap(), i.parse().unwrap())
}

/// Posts a tool call and reads its priming event; the stream number comes from its id.
async fn post_primed(
    service: &StreamableHttpService,
    sid: &str,
    id: i64,
    tool: &str,
    args: serde_json::Value,
) -> (Sse, String) {
    let response = service
        .handle(request(post(Some(sid)), call(id, tool, args)))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut sse = Sse::new(response);
    let priming = sse.until_id().await;
    assert!(priming.ends_with("_0"), "priming id {priming:?}");
    (sse, priming)
}

#[tokio::test]
async fn s11_event_ids_name_their_stream_and_are_unique() {
    for version in ["2025-06-18", "2025-11-25"] {
        let service = service(with_store());
        let sid = initialize(&service, version).await;
        let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
        let mut all = Vec::new();
        for id in 1..=3 {
            let response = service
                .handle(request(
                    post(Some(&sid)),
                    call(id, "progress", json!({"steps": 3})),
                ))
                .await;
            let mut sse = Sse::new(response);
            sse.rest(100).await;
            let ids = ids_in(&sse.raw_text());
            let streams: HashSet<u64> = ids.iter().map(|i| split_id(i).0).collect();
            assert_eq!(streams.len(), 1, "one stream per POST: {ids:?}");
            let indices: Vec<u64> = ids.iter().map(|i| split_id(i).1).collect();
            assert!(indices.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
            all.extend(ids);
        }
        call_tool(&service, &sid, 9, "broadcast", json!({"count": 2})).await;
        standalone.next().await.unwrap();
        standalone.next().await.unwrap();
        let standalone_ids = ids_in(&standalone.raw_text());
        assert!(standalone_ids.iter().all(|i| split_id(i).0 == 0));
        all.extend(standalone_ids);
        let unique: HashSet<&String> = all.iter().collect();
        assert_eq!(unique.len(), all.len(), "{version}: {all:?}");
    }
}

#[tokio::test]
async fn s11_resume_replays_that_stream_only_then_goes_live() {
    let service = service(with_store());
    let sid = initialize(&service, "2025-06-18").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    call_tool(
        &service,
        &sid,
        1,
        "broadcast",
        json!({"text": "a", "count": 2}),
    )
    .await;
    standalone.next().await.unwrap();
    let after = standalone.last_event_id().to_owned();
    drop(standalone);
    // Other streams' events in between, and more on this one.
    call_tool(&service, &sid, 2, "progress", json!({"steps": 2})).await;
    call_tool(
        &service,
        &sid,
        3,
        "broadcast",
        json!({"text": "b", "count": 2}),
    )
    .await;
    let response = service.handle(get(&sid, Some(&after))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut resumed = Sse::new(response);
    let mut got = Vec::new();
    for _ in 0..3 {
        let m = message(&resumed.next().await.unwrap());
        let mcp_jsonrpc::Message::Notification(n) = m else {
            panic!("only this stream's notifications: {m:?}");
        };
        let p: serde_json::Value = n.parse_params().unwrap();
        got.push(format!("{}{}", p["data"].as_str().unwrap(), p["i"]));
    }
    assert_eq!(got, ["a1", "b0", "b1"]);
    // Then live.
    call_tool(&service, &sid, 4, "broadcast", json!({"text": "c"})).await;
    let m = message(&resumed.next().await.unwrap());
    assert_eq!(params_of(&m)["data"], "c");
}

#[tokio::test]
async fn s11_bad_last_event_ids_are_400_saying_which() {
    let service = service(Config::default().event_store(InMemoryEventStore::new(2_000, 1 << 20)));
    let sid = initialize(&service, "2025-06-18").await;
    let ids = ids_in(&{
        let response = service
            .handle(request(
                post(Some(&sid)),
                call(1, "progress", json!({"steps": 40})),
            ))
            .await;
        let mut sse = Sse::new(response);
        sse.rest(100).await;
        sse.raw_text()
    });
    let (stream, _) = split_id(&ids[0]);
    let cases = [
        ("abc".to_owned(), "malformed"),
        ("1-2".to_owned(), "malformed"),
        ("_".to_owned(), "malformed"),
        (format!("{stream}_x"), "malformed"),
        ("99_0".to_owned(), "unknown"),
        (format!("{stream}_5000"), "unknown"),
        (ids[0].clone(), "purged"),
    ];
    for (id, word) in cases {
        let response = service.handle(get(&sid, Some(&id))).await;
        let (_, _, message) = refusal(response, StatusCode::BAD_REQUEST).await;
        let message = message.to_lowercase();
        let named = if word == "purged" {
            message.contains("purged") || message.contains("too old")
        } else {
            message.contains(word)
        };
        assert!(named, "{id}: {message}");
    }
    let mut twice = get(&sid, Some("0_1"));
    twice
        .headers_mut()
        .append("last-event-id", "0_2".parse().unwrap());
    refusal(service.handle(twice).await, StatusCode::BAD_REQUEST).await;
    // Without a store, any Last-Event-ID.
    let service = crate::harness::service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let response = service.handle(get(&sid, Some("0_0"))).await;
    let (_, _, message) = refusal(response, StatusCode::BAD_REQUEST).await;
    assert!(message.contains("no events"), "{message}");
}

#[tokio::test]
async fn s11_a_forged_id_past_the_end_of_a_finished_stream_is_400() {
    let service = service(with_store());
    let sid = initialize(&service, "2025-06-18").await;
    let response = service
        .handle(request(
            post(Some(&sid)),
            call(1, "progress", json!({"steps": 2})),
        ))
        .await;
    let mut sse = Sse::new(response);
    sse.rest(10).await;
    let last = ids_in(&sse.raw_text()).pop().unwrap();
    let (stream, index) = split_id(&last);
    // Its own last id: nothing to replay, and the stream ends.
    let response = service.handle(get(&sid, Some(&last))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(Sse::new(response).ends().await);
    // One past it was never given out.
    let forged = format!("{stream}_{}", index + 1);
    let response = service.handle(get(&sid, Some(&forged))).await;
    let (_, _, message) = refusal(response, StatusCode::BAD_REQUEST).await;
    assert!(message.contains("unknown"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn s11_resume_at_every_point_gets_every_message_once_in_order() {
    const STEPS: u64 = 6;
    let service = service(with_store());
    let sid = initialize(&service, "2025-11-25").await;
    let full: Vec<String> = (1..=STEPS)
        .map(|p| format!("p{p}"))
        .chain(["r?".into()])
        .collect();
    for k in 0..=full.len() {
        let id = 100 + k as i64;
        let (mut sse, priming) = post_primed(
            &service,
            &sid,
            id,
            "progress",
            json!({"steps": STEPS, "delay_ms": 7}),
        )
        .await;
        let mut got = Vec::new();
        for _ in 0..k {
            got.push(label(&message(&sse.next().await.unwrap())));
        }
        let last = if k == 0 {
            priming
        } else {
            sse.last_event_id().to_owned()
        };
        drop(sse);
        // Half the cuts resume at once, half after the request is over.
        if k % 2 == 1 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let response = service.handle(get(&sid, Some(&last))).await;
        assert_eq!(response.status(), StatusCode::OK, "k={k}");
        let mut resumed = Sse::new(response);
        got.extend(messages(&resumed.rest(100).await).iter().map(label));
        let want: Vec<String> = full
            .iter()
            .map(|l| {
                if l == "r?" {
                    format!("r{id}")
                } else {
                    l.clone()
                }
            })
            .collect();
        assert_eq!(got, want, "cut after {k} events");
    }
}

#[tokio::test(start_paused = true)]
async fn s13_closing_a_post_does_not_cancel_the_request_and_with_a_store_it_resumes() {
    let service = service(with_store());
    let sid = initialize(&service, "2025-11-25").await;
    let (sse, priming) = post_primed(&service, &sid, 1, "sleep", json!({"ms": 500})).await;
    drop(sse);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let response = service.handle(get(&sid, Some(&priming))).await;
    let msgs = messages(&sse_events(response, 10).await);
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    assert_eq!(result_of(&msgs[0]), crate::app::text("slept"));
}

#[tokio::test(start_paused = true)]
async fn s13_without_a_store_a_closed_post_still_runs_and_its_messages_are_dropped_and_logged() {
    let (logs, _guard) = crate::logs::capture();
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    let response = service
        .handle(request(
            post(Some(&sid)),
            call(1, "sleep", json!({"ms": 500, "then_broadcast": true})),
        ))
        .await;
    drop(response);
    // The request ran to its end: its broadcast comes, and its response does not (dropped).
    let event = standalone.next().await.unwrap();
    assert_eq!(label(&message(&event)), "n:notifications/message");
    call_tool(&service, &sid, 2, "broadcast", json!({"text": "next"})).await;
    let m = message(&standalone.next().await.unwrap());
    assert_eq!(
        params_of(&m)["data"],
        "next",
        "the response must go nowhere"
    );
    assert!(
        logs.has(tracing::Level::DEBUG, &["no event store"]),
        "{}",
        logs.dump()
    );
}

#[tokio::test]
async fn s14_priming_event_with_a_store_at_2025_11_25() {
    let service = service(with_store().retry(Duration::from_millis(1500)));
    let sid = initialize(&service, "2025-11-25").await;
    let response = service.handle(request(post(Some(&sid)), ping(1))).await;
    let mut sse = Sse::new(response);
    let first = sse.frame_within(WAIT).await.unwrap();
    let text = String::from_utf8(first.to_vec()).unwrap();
    assert!(
        text.contains("retry: 1500") || text.contains("retry:1500"),
        "{text:?}"
    );
    assert!(
        text.contains("id: ") && text.contains("\ndata:\n"),
        "empty data: {text:?}"
    );
    assert!(sse.until_id().await.ends_with("_0"));
    assert_eq!(sse.retry(), Some(Duration::from_millis(1500)));
    assert_eq!(messages(&sse.rest(10).await).len(), 1);
    // 06 with a store: ids, no priming; 11 without a store: neither.
    for (config, version, ids, priming) in [
        (with_store(), "2025-06-18", true, false),
        (Config::default(), "2025-11-25", false, false),
    ] {
        let service = crate::harness::service(config);
        let sid = initialize(&service, version).await;
        let response = service.handle(request(post(Some(&sid)), ping(1))).await;
        let mut sse = Sse::new(response);
        sse.rest(10).await;
        let raw = sse.raw_text();
        assert_eq!(!ids_in(&raw).is_empty(), ids, "{version}: {raw:?}");
        assert_eq!(raw.contains("retry"), priming, "{version}: {raw:?}");
    }
}

#[tokio::test]
async fn s14_the_application_can_end_a_stream_and_the_client_resumes() {
    let service = service(with_store());
    let sid = initialize(&service, "2025-11-25").await;
    let (mut sse, _) =
        post_primed(&service, &sid, 1, "poll", json!({"before": 2, "after": 2})).await;
    // The stream's connection ends: after what was written before, if anything (what was
    // queued and not written yet stays in the store).
    let mut got: Vec<String> = messages(&sse.rest(100).await).iter().map(label).collect();
    assert!(got.len() <= 2, "{got:?}");
    let response = service.handle(get(&sid, Some(sse.last_event_id()))).await;
    got.extend(messages(&sse_events(response, 100).await).iter().map(label));
    assert_eq!(got, ["p1", "p2", "p3", "p4", "r1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s14_the_initialize_stream_has_unique_event_ids() {
    let service = service(with_store());
    for _ in 0..40 {
        let response = service
            .handle(request(post(None), initialize_body(0, "2025-11-25")))
            .await;
        let mut sse = Sse::new(response);
        sse.rest(10).await;
        let ids = ids_in(&sse.raw_text());
        let unique: HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "{:?}", sse.raw_text());
    }
}

#[tokio::test]
async fn s14_the_initialize_stream_primes_when_the_client_asks_for_2025_11_25() {
    // The version is negotiated by this very request: what the client asked for decides, since
    // a client asking for 2025-11-25 reads priming events.
    let service = service(with_store());
    for (asked, primed) in [("2025-11-25", true), ("2025-06-18", false)] {
        let response = service
            .handle(request(post(None), initialize_body(0, asked)))
            .await;
        let mut sse = Sse::new(response);
        sse.rest(10).await;
        let text = sse.raw_text();
        let ids = ids_in(&text);
        if primed {
            assert_eq!(ids, ["1_0", "1_1"], "{text:?}");
            assert!(text.starts_with("id: 1_0\nretry: "), "{text:?}");
        } else {
            assert_eq!(ids, ["1_0"], "{text:?}");
            assert!(!text.contains("retry:"), "{text:?}");
        }
    }
}

#[tokio::test]
async fn s14_a_fresh_get_primes_before_what_was_queued_for_it() {
    let service = service(with_store());
    let sid = initialize(&service, "2025-11-25").await;
    call_tool(&service, &sid, 1, "broadcast", json!({"count": 3})).await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    // The opening comment and the priming event; a client cut here resumes from its id.
    let priming = standalone.until_id().await;
    drop(standalone);
    let response = service.handle(get(&sid, Some(&priming))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut resumed = Sse::new(response);
    for i in 0..3 {
        let m = message(&resumed.next().await.unwrap());
        assert_eq!(params_of(&m)["i"], i);
    }
}

#[tokio::test]
async fn s14_a_json_mode_answer_that_turns_to_sse_is_primed_and_resumable() {
    let service = service(with_store().json_response(true));
    let response = service
        .handle(request(post(None), initialize_body(0, "2025-11-25")))
        .await;
    let sid = session_id(response.headers()).unwrap();
    body_bytes(response).await;
    let response = service
        .handle(request(
            post(Some(&sid)),
            call(1, "progress", json!({"steps": 2})),
        ))
        .await;
    let mut sse = Sse::new(response);
    let priming = sse.until_id().await;
    assert!(priming.ends_with("_0"), "{priming}");
    let all: Vec<String> = messages(&sse.rest(10).await).iter().map(label).collect();
    assert_eq!(all, ["p1", "p2", "r1"]);
    let response = service.handle(get(&sid, Some(&priming))).await;
    let replayed: Vec<String> = messages(&sse_events(response, 10).await)
        .iter()
        .map(label)
        .collect();
    assert_eq!(replayed, all);
}
