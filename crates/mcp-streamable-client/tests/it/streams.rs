//! C3: the standalone GET stream. C4: resumption with `Last-Event-ID`, `retry` and the budget.
//! C5: a stream over for good answers its request with an error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use mcp_jsonrpc::Id;
use mcp_streamable_client::{LOST_RESPONSE_CODE, ReconnectPolicy};
use serde_json::json;

use crate::fake::{self, Fake, SESSION};
use crate::*;

fn note(method: &str) -> String {
    json!({"jsonrpc": "2.0", "method": method}).to_string()
}

fn reply_to_2() -> String {
    fake::result(&json!(2), json!({"ok": true}))
}

/// Asserts the response is the made-up error of a lost response, and returns its message.
fn lost(response: &mcp_jsonrpc::Response) -> String {
    let error = response.result().expect_err("an error response");
    assert_eq!(error.code, LOST_RESPONSE_CODE);
    assert!(
        error.message.starts_with("response lost: "),
        "{}",
        error.message
    );
    error.message.clone()
}

#[tokio::test]
async fn c3_standalone_get_opens_after_initialization_and_405_is_harmless() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let mut conn = connect(builder(&server.url)).await;
    handshake(&mut conn).await;
    let log = server
        .wait_for(|log| log.iter().any(|r| r.method == Method::GET))
        .await;
    let get = log.iter().position(|r| r.method == Method::GET).unwrap();
    let initialized = log
        .iter()
        .position(|r| r.is_post("notifications/initialized"))
        .unwrap();
    assert!(get > initialized, "{log:#?}");
    assert_eq!(log[get].header("accept"), Some("text/event-stream"));
    assert_eq!(log[get].header("mcp-session-id"), Some(SESSION));
    assert_eq!(log[get].header("last-event-id"), None);

    // The 405 is no error: the connection goes on, and the GET is not retried.
    send(&conn, request(2, "tools/list")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(2)));
    // Long past any reconnection delay of the test policy.
    settle(Duration::from_secs(1)).await;
    assert_eq!(server.count(Method::GET), 1);
}

#[tokio::test]
async fn c3_standalone_stream_can_be_turned_off() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    send(&conn, request(2, "tools/list")).await.unwrap();
    recv_response(&mut conn).await;
    settle(Duration::from_secs(1)).await;
    assert_eq!(server.count(Method::GET), 0);
}

#[tokio::test]
async fn c3_standalone_stream_delivers_messages_and_resumes_after_a_drop() {
    let gets = Arc::new(AtomicUsize::new(0));
    let held = Arc::new(Mutex::new(Vec::new()));
    let server = Fake::start({
        let (gets, held) = (gets.clone(), held.clone());
        move |req| {
            let (gets, held) = (gets.clone(), held.clone());
            async move {
                if req.method != Method::GET {
                    return fake::standard(&req);
                }
                match gets.fetch_add(1, Ordering::SeqCst) {
                    0 => fake::sse(format!(
                        "id: g_0\ndata: {}\n\n",
                        note("notifications/tools/list_changed")
                    )),
                    _ => {
                        let (tx, response) = fake::sse_channel(4);
                        let event = format!(
                            "id: g_1\ndata: {}\n\n",
                            note("notifications/resources/list_changed")
                        );
                        tx.send(Bytes::from(event)).await.unwrap();
                        // Keep the stream open for the rest of the test.
                        held.lock().unwrap().push(tx);
                        response
                    }
                }
            }
        }
    })
    .await;
    let mut conn = connect(builder(&server.url)).await;
    handshake(&mut conn).await;
    assert_eq!(
        recv(&mut conn).await.method(),
        Some("notifications/tools/list_changed")
    );
    assert_eq!(
        recv(&mut conn).await.method(),
        Some("notifications/resources/list_changed")
    );
    let gets: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == Method::GET)
        .collect();
    assert_eq!(gets.len(), 2);
    assert_eq!(gets[1].header("last-event-id"), Some("g_0"));
}

#[tokio::test]
async fn c4_resume_waits_for_the_servers_retry_and_sends_last_event_id() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/call") {
            // A priming event asking for 500 ms, then the connection ends (polling, S14).
            return fake::sse("id: s1_0\nretry: 500\ndata:\n\n");
        }
        if req.method == Method::GET && req.header("last-event-id").is_some() {
            return fake::sse(format!("id: s1_1\ndata: {}\n\n", reply_to_2()));
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    send(&conn, request(2, "tools/call")).await.unwrap();

    // The priming event is no message: the first thing received is the response.
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(2)));
    assert!(!response.is_error());
    // Exactly once.
    assert_quiet(&mut conn, Duration::from_millis(200)).await;

    let log = server.requests();
    let post = log.iter().find(|r| r.is_post("tools/call")).unwrap();
    let gets: Vec<_> = log.iter().filter(|r| r.method == Method::GET).collect();
    assert_eq!(gets.len(), 1, "{log:#?}");
    assert_eq!(gets[0].header("last-event-id"), Some("s1_0"));
    assert_eq!(gets[0].header("mcp-session-id"), Some(SESSION));
    assert!(
        gets[0].at.duration_since(post.at) >= Duration::from_millis(500),
        "resumed after {:?}",
        gets[0].at.duration_since(post.at)
    );
}

#[tokio::test]
async fn c4_the_budget_refills_when_a_reconnect_makes_progress() {
    // Four resumptions in a row, each moving the event id on, with a budget of two: only a
    // budget refilled by progress reaches the response.
    let gets = Arc::new(AtomicUsize::new(0));
    let server = Fake::start({
        let gets = gets.clone();
        move |req| {
            let gets = gets.clone();
            async move {
                if req.is_post("tools/call") {
                    return fake::sse("id: p_0\ndata:\n\n");
                }
                if req.method == Method::GET {
                    let n = gets.fetch_add(1, Ordering::SeqCst) + 1;
                    if n < 5 {
                        return fake::sse(format!("id: p_{n}\ndata:\n\n"));
                    }
                    return fake::sse(format!("id: p_5\ndata: {}\n\n", reply_to_2()));
                }
                fake::standard(&req)
            }
        }
    })
    .await;
    let policy = ReconnectPolicy::default()
        .initial_delay(Duration::from_millis(5))
        .max_retries(2);
    let mut conn = connect(
        builder(&server.url)
            .standalone_stream(false)
            .reconnect(policy),
    )
    .await;
    handshake(&mut conn).await;
    send(&conn, request(2, "tools/call")).await.unwrap();
    let response = recv_response(&mut conn).await;
    assert!(!response.is_error(), "{response:?}");
    let gets: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == Method::GET)
        .collect();
    let ids: Vec<_> = gets
        .iter()
        .map(|r| r.header("last-event-id").unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["p_0", "p_1", "p_2", "p_3", "p_4"]);
}

#[tokio::test]
async fn c4_c5_a_spent_budget_answers_the_request_with_an_error() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/call") {
            return fake::sse("id: b_0\ndata:\n\n");
        }
        if req.method == Method::GET {
            return fake::status(503, "try later");
        }
        fake::standard(&req)
    })
    .await;
    let policy = ReconnectPolicy::default()
        .initial_delay(Duration::from_millis(5))
        .max_retries(3);
    let mut conn = connect(
        builder(&server.url)
            .standalone_stream(false)
            .reconnect(policy),
    )
    .await;
    handshake(&mut conn).await;
    send(&conn, request(2, "tools/call")).await.unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(2)));
    let message = lost(&response);
    assert!(message.contains("3 attempts"), "{message}");
    assert_eq!(server.count(Method::GET), 3);
}

#[tokio::test]
async fn c5_refused_resumption_answers_each_pending_request_with_an_error() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/call") {
            return fake::sse(format!("id: {}_0\ndata:\n\n", req.id()));
        }
        if req.method == Method::GET {
            return fake::status(400, "unknown event id");
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    send(&conn, request(2, "tools/call")).await.unwrap();
    send(&conn, request(3, "tools/call")).await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let response = recv_response(&mut conn).await;
        let message = lost(&response);
        assert!(message.contains("400"), "{message}");
        ids.push(response.id().cloned().unwrap());
    }
    ids.sort_by_key(|id| id.to_string());
    assert_eq!(ids, [Id::from(2), Id::from(3)]);
    assert_quiet(&mut conn, Duration::from_millis(100)).await;
}

#[tokio::test]
async fn c5_a_stream_without_event_ids_cannot_be_resumed() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/call") {
            return fake::sse(format!("data: {}\n\n", note("notifications/progress")));
        }
        if req.is_post("ping") {
            return fake::json_reply(json!({"jsonrpc": "2.0", "method": "notifications/message"}));
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    send(&conn, request(2, "tools/call")).await.unwrap();
    assert_eq!(
        recv(&mut conn).await.method(),
        Some("notifications/progress")
    );
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(2)));
    assert!(lost(&response).contains("event id"));
    // A JSON reply without the response is over at once too.
    send(&conn, request(3, "ping")).await.unwrap();
    assert_eq!(
        recv(&mut conn).await.method(),
        Some("notifications/message")
    );
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(3)));
    assert_eq!(server.count(Method::GET), 0);
}
