//! S22: memory per session is bounded, whatever the client does.

use http::StatusCode;
use mcp_jsonrpc::{Message, Response};
use mcp_streamable_server::ServerConnection;
use mcp_streamable_server::{Config, InMemoryEventStore};
use mcp_transport::{Connection, Sender};
use serde_json::{Value, json};
use tracing::Level;

use crate::harness::*;

#[tokio::test]
async fn s22_100k_notifications_with_nobody_reading_stay_under_the_caps() {
    const BUDGET: usize = 64 * 1024;
    const STORE_CAP: usize = 256 * 1024;
    let (logs, _guard) = crate::logs::capture();
    let store = InMemoryEventStore::new(STORE_CAP, 1 << 30);
    let config = Config::default()
        .max_buffered_bytes(BUDGET)
        .event_store(store.clone());
    let service = service(config);
    let sid = initialize(&service, "2025-11-25").await;
    let mut max_buffered = 0;
    for round in 0..10 {
        let msgs = call_tool(
            &service,
            &sid,
            round,
            "flood",
            json!({"count": 10_000, "bytes": 40}),
        )
        .await;
        assert_eq!(result_of(&msgs[0]), json!({"failed": 0}));
        max_buffered = max_buffered.max(service.buffered_bytes());
        assert!(
            store.retained_bytes() <= STORE_CAP,
            "{}",
            store.retained_bytes()
        );
    }
    assert!(max_buffered <= BUDGET, "{max_buffered}");
    assert!(
        max_buffered > BUDGET / 2,
        "the standalone stream keeps what fits: {max_buffered}"
    );
    assert!(
        logs.has(Level::WARN, &["oldest message dropped"]),
        "{}",
        logs.dump()
    );
    // A GET now gets the newest of them, in order.
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    let first = params_of(&message(&standalone.next().await.unwrap()))["i"]
        .as_u64()
        .unwrap();
    let second = params_of(&message(&standalone.next().await.unwrap()))["i"]
        .as_u64()
        .unwrap();
    assert!(first > 9_000 && second == first + 1, "{first} {second}");
}

#[tokio::test]
async fn s22_a_slow_reader_is_disconnected_and_resumes_from_the_store() {
    let config = Config::default()
        .max_buffered_bytes(8 * 1024)
        .event_store(InMemoryEventStore::default());
    let service = service(config);
    let sid = initialize(&service, "2025-06-18").await;
    let mut slow = Sse::new(service.handle(get(&sid, None)).await);
    // Reads the first message, then falls behind.
    call_tool(&service, &sid, 1, "flood", json!({"count": 1, "bytes": 10})).await;
    slow.next().await.unwrap();
    call_tool(
        &service,
        &sid,
        2,
        "flood",
        json!({"count": 200, "bytes": 100}),
    )
    .await;
    let mut seen: Vec<u64> = Vec::new();
    while let Some(event) = slow.next().await {
        seen.push(params_of(&message(&event))["i"].as_u64().unwrap());
        assert!(seen.len() <= 200);
    }
    assert!(seen.len() < 200, "disconnected before the end");
    let response = service.handle(get(&sid, Some(slow.last_event_id()))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut resumed = Sse::new(response);
    while seen.len() < 200 {
        let event = resumed.next().await.unwrap();
        seen.push(params_of(&message(&event))["i"].as_u64().unwrap());
    }
    assert_eq!(seen, (0..200).collect::<Vec<u64>>());
}

#[tokio::test]
async fn s22_without_a_store_a_slow_readers_backlog_is_dropped_with_a_warning() {
    let (logs, _guard) = crate::logs::capture();
    let service = service(Config::default().max_buffered_bytes(8 * 1024));
    let sid = initialize(&service, "2025-06-18").await;
    let mut slow = Sse::new(service.handle(get(&sid, None)).await);
    slow.frame_within(WAIT).await.unwrap();
    call_tool(
        &service,
        &sid,
        1,
        "flood",
        json!({"count": 200, "bytes": 100}),
    )
    .await;
    let mut n = 0;
    while slow.next().await.is_some() {
        n += 1;
        assert!(n <= 200);
    }
    assert!(n < 200, "disconnected before the end");
    assert!(service.buffered_bytes() <= 8 * 1024);
    assert!(
        logs.has(Level::WARN, &["too far behind", "dropped"]),
        "{}",
        logs.dump()
    );
}

#[tokio::test]
async fn s22_a_message_larger_than_the_budget_still_reaches_its_reader() {
    for json_mode in [false, true] {
        let config = Config::default()
            .max_buffered_bytes(1024)
            .json_response(json_mode);
        let service = service(config);
        let response = service
            .handle(request(post(None), initialize_body(0, "2025-06-18")))
            .await;
        let sid = session_id(response.headers()).unwrap();
        body_bytes(response).await;
        let response = service
            .handle(request(
                post(Some(&sid)),
                call(1, "big", json!({"bytes": 10_000})),
            ))
            .await;
        assert_eq!(response.status(), StatusCode::OK, "json mode {json_mode}");
        let msgs = if json_mode {
            mcp_jsonrpc::parse(&body_bytes(response).await)
                .unwrap()
                .into_messages()
        } else {
            messages(&sse_events(response, 10).await)
        };
        assert_eq!(msgs.len(), 1, "json mode {json_mode}");
        let text: Value = result_of(&msgs[0]);
        assert_eq!(text["content"][0]["text"].as_str().unwrap().len(), 10_000);
    }
}

#[tokio::test(start_paused = true)]
async fn s22_abandoned_request_streams_hold_nothing() {
    let service = service(Config::default().max_buffered_bytes(1 << 20));
    let sid = initialize(&service, "2025-06-18").await;
    let response = service
        .handle(request(
            post(Some(&sid)),
            call(1, "progress", json!({"steps": 50, "delay_ms": 10})),
        ))
        .await;
    drop(response);
    for _ in 0..10 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(service.buffered_bytes(), 0);
    }
}

/// A 2025-03-26 batch of `n` calls of the `big` tool, each answered with about `bytes` bytes.
fn big_batch(n: i64, bytes: u64) -> String {
    let calls: Vec<String> = (1..=n)
        .map(|id| call(id, "big", json!({"bytes": bytes})))
        .collect();
    format!("[{}]", calls.join(","))
}

/// The ids of the responses among `msgs`, and how many of them are errors.
fn answered(msgs: &[Message]) -> (Vec<i64>, usize) {
    let mut ids = Vec::new();
    let mut errors = 0;
    for m in msgs {
        if let Message::Response(r) = m {
            ids.push(match r.id() {
                Some(mcp_jsonrpc::Id::Number(n)) => *n,
                _ => -1,
            });
            errors += usize::from(r.is_error());
        }
    }
    ids.sort_unstable();
    (ids, errors)
}

/// The case: a 2025-03-26 batch whose answers exceed the session's buffer, read late.
/// Its stream is not primed, so its client holds no event id to resume from, store or not:
/// it is kept, and the answers that did not fit become errors saying so.
#[tokio::test]
async fn s22_a_batch_past_the_buffer_gets_every_answer_or_an_error_for_it() {
    for with_store in [false, true] {
        let (logs, _guard) = crate::logs::capture();
        let mut config = Config::default().max_buffered_bytes(16 * 1024);
        if with_store {
            config = config.event_store(InMemoryEventStore::default());
        }
        let service = service(config);
        let sid = initialize(&service, "2025-03-26").await;
        let response = service
            .handle(request(post(Some(&sid)), big_batch(50, 1000)))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let msgs = messages(&sse_events(response, 100).await);
        let (ids, errors) = answered(&msgs);
        // Every request is answered, none silently missing; the ones that did not fit say so.
        assert_eq!(
            ids,
            (1..=50).collect::<Vec<i64>>(),
            "store {with_store}: {msgs:?}"
        );
        assert!(
            errors > 0,
            "the batch's answers exceed the buffer: some were shed"
        );
        let dropped = msgs.iter().find_map(|m| match m {
            Message::Response(r) => r.result().err().map(|e| e.message.clone()),
            _ => None,
        });
        assert!(dropped.unwrap().contains("answer dropped"));
        assert!(service.buffered_bytes() <= 16 * 1024);
        assert!(logs.has(Level::WARN, &["too far behind", "replaced by errors"]));
    }
}

/// Waits, bounded, for the service's shedding task to bring the total under `total`.
async fn within_the_budget(service: &mcp_streamable_server::StreamableHttpService, total: usize) {
    for _ in 0..1000 {
        if service.buffered_bytes() <= total {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("{} bytes buffered, past {total}", service.buffered_bytes());
}

/// Opens `n` sessions, each with a standalone GET stream that is never read.
async fn sessions_not_reading(
    service: &mcp_streamable_server::StreamableHttpService,
    n: usize,
) -> Vec<(String, Sse)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let sid = initialize(service, "2025-06-18").await;
        let get = Sse::new(service.handle(get(&sid, None)).await);
        out.push((sid, get));
    }
    out
}

#[tokio::test]
async fn s22_all_sessions_together_stay_within_the_server_wide_budget() {
    const TOTAL: usize = 256 * 1024;
    let config = Config::default()
        .max_buffered_bytes(1 << 20)
        .max_total_buffered_bytes(TOTAL);
    let service = service(config);
    let idle = sessions_not_reading(&service, 20).await;
    // 100 KiB for each of 20 sessions, 2 MiB in all: each session's own cap allows it.
    let mut peak = 0;
    for (i, (sid, _)) in idle.iter().enumerate() {
        let i = i64::try_from(i).unwrap();
        call_tool(
            &service,
            sid,
            i,
            "flood",
            json!({"count": 100, "bytes": 1000}),
        )
        .await;
        peak = peak.max(service.buffered_bytes());
    }
    // Sessions over their share shed at once; those that filled before the budget was crossed
    // are shed by the service's task, within a pause: the total goes back under the budget.
    assert!(peak <= 2 * TOTAL, "peak {peak}");
    within_the_budget(&service, TOTAL).await;
    // A good session is still served.
    let good = initialize(&service, "2025-06-18").await;
    let msgs = call_tool(&service, &good, 1, "echo", json!({"text": "still here"})).await;
    assert_eq!(result_of(&msgs[0]), crate::app::text("still here"));
}

#[tokio::test]
async fn s22_past_the_server_wide_budget_the_largest_backlog_goes_first() {
    const TOTAL: usize = 256 * 1024;
    let config = Config::default()
        .max_buffered_bytes(1 << 20)
        .max_total_buffered_bytes(TOTAL);
    let service = service(config);
    let mut idle = sessions_not_reading(&service, 11).await;
    let (big, _) = &idle[0];
    // One session holds 200 KiB (under its own cap, under the total).
    call_tool(
        &service,
        big,
        0,
        "flood",
        json!({"count": 200, "bytes": 1000}),
    )
    .await;
    let big_before = service.buffered_bytes();
    assert!(big_before >= 200_000, "{big_before}");
    // Ten small ones add 10 KiB each, under their share (25 KiB): the total is crossed, and
    // the big session's backlog, not theirs, is shed.
    for (i, (sid, _)) in idle.iter().enumerate().skip(1) {
        let i = i64::try_from(i).unwrap();
        call_tool(
            &service,
            sid,
            i,
            "flood",
            json!({"count": 10, "bytes": 1000}),
        )
        .await;
    }
    within_the_budget(&service, TOTAL).await;
    // Each small session's GET still has its ten messages; the big one's was cut off.
    for (_, get) in idle.iter_mut().skip(1) {
        assert_eq!(get.rest(10).await.len(), 10);
    }
    let (_, big_get) = &mut idle[0];
    assert!(big_get.rest(200).await.len() < 200);
}

#[tokio::test]
async fn s22_unread_client_messages_stay_within_the_server_wide_budget() {
    const TOTAL: usize = 8 * 1024;
    // The application answers initialize, then reads nothing more until the gate opens.
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let opened = std::sync::Arc::clone(&gate);
    let config = Config::default().max_total_incoming_bytes(TOTAL);
    let service = service_with(config, move |mut conn: ServerConnection, _parts| {
        let gate = std::sync::Arc::clone(&opened);
        async move {
            let sender = conn.sender();
            if let Ok(Some(Message::Request(init))) = conn.recv().await {
                let result = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "gated", "version": "0"}});
                let result = mcp_jsonrpc::to_raw_value(&result).unwrap();
                let _ = sender.send(Response::success(init.id, result).into()).await;
            }
            let _initialized = conn.recv().await;
            let _open = gate.acquire().await;
            while let Ok(Some(_)) = conn.recv().await {}
        }
    });
    let sid = initialize(&service, "2025-06-18").await;
    let pad = "x".repeat(2000);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"pad": pad}})
        .to_string();
    let mut accepted = 0;
    let refused = loop {
        let response = service
            .handle(request(post(Some(&sid)), note.clone()))
            .await;
        if response.status() != StatusCode::ACCEPTED {
            break response;
        }
        accepted += 1;
        assert!(accepted <= 10, "the budget never refused");
    };
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: Value = serde_json::from_slice(&body_bytes(refused).await).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still to read")
    );
    assert!((3..=4).contains(&accepted), "{accepted}");
    // Once the application reads, the bytes are given back and POSTs are taken again.
    gate.add_permits(1);
    for _ in 0..1000 {
        let response = service
            .handle(request(post(Some(&sid)), note.clone()))
            .await;
        if response.status() == StatusCode::ACCEPTED {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the budget was never given back");
}
