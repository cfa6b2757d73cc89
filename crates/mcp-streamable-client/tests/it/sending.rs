//! C1, C2: one POST per message with the session headers; JSON, arrays, SSE and 202 replies.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Method;
use mcp_jsonrpc::{Id, Message, Request, to_raw_value};
use mcp_transport::{Connection, Sender};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::fake::{self, Fake, SESSION, VERSION};
use crate::*;

#[tokio::test]
async fn c1_post_headers_carry_session_and_protocol_version() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    send(&conn, request(2, "tools/list")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(2)));
    assert_eq!(conn.session_id().as_deref(), Some(SESSION));
    assert_eq!(conn.protocol_version().as_deref(), Some(VERSION));

    let log = server.requests();
    assert_eq!(log.len(), 3, "{log:#?}");
    for (i, req) in log.iter().enumerate() {
        assert_eq!(req.method, Method::POST);
        assert_eq!(
            req.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(req.header("content-type"), Some("application/json"));
        // One message per POST, never an array.
        assert!(req.json().is_object(), "{:?}", req.body);
        if i == 0 {
            assert_eq!(req.header("mcp-session-id"), None);
            assert_eq!(req.header("mcp-protocol-version"), None);
        } else {
            assert_eq!(req.header("mcp-session-id"), Some(SESSION));
            assert_eq!(req.header("mcp-protocol-version"), Some(VERSION));
        }
    }
    assert!(log[0].is_post("initialize"));
    assert!(log[1].is_post("notifications/initialized"));
    assert!(log[2].is_post("tools/list"));
}

// On the test clock: the answer's 300 ms pass once the ping waits too.
#[tokio::test(start_paused = true)]
async fn c1_messages_sent_while_initialize_is_in_flight_wait_for_the_session() {
    let server = Fake::start(|req| async move {
        if req.is_post("initialize") {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        fake::standard(&req)
    })
    .await;
    let conn = connect(builder(&server.url).standalone_stream(false)).await;
    let sender = conn.sender();
    let init = tokio::spawn({
        let sender = sender.clone();
        async move { sender.send(initialize(1).into()).await }
    });
    server.wait_for(|log| !log.is_empty()).await;
    within(sender.send(request(2, "ping").into()))
        .await
        .unwrap();
    within(init).await.unwrap().unwrap();
    let log = server.requests();
    let ping = log.iter().find(|r| r.is_post("ping")).unwrap();
    assert_eq!(ping.header("mcp-session-id"), Some(SESSION));
}

#[tokio::test]
async fn c2_json_single_and_array_replies_are_read() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/list") {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}});
            let response: Value = serde_json::from_str(&fake::result(&req.id(), json!({"tools": []}))).unwrap();
            return fake::json_reply(json!([note, response]));
        }
        if req.is_post("ping") {
            // Parameters on the media type are fine.
            return fake::answer(200, "application/json; charset=utf-8", fake::result(&req.id(), json!({})));
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;

    send(&conn, request(2, "tools/list")).await.unwrap();
    let note = recv(&mut conn).await;
    assert_eq!(note.method(), Some("notifications/message"));
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(2)));
    assert_eq!(response.result().unwrap().get(), r#"{"tools":[]}"#);

    send(&conn, request(3, "ping")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(3)));
}

#[tokio::test]
async fn c2_sse_replies_are_read_and_202_means_accepted() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/call") {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}});
            return fake::sse(format!(
                ": a comment\nevent: message\ndata: {note}\n\ndata: {}\n\n",
                fake::result(&req.id(), json!({"content": []}))
            ));
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    // The notification was answered 202: accepted, nothing to read.
    send(&conn, request(7, "tools/call")).await.unwrap();
    assert_eq!(
        recv(&mut conn).await.method(),
        Some("notifications/progress")
    );
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(7)));
    assert_quiet(&mut conn, Duration::from_millis(100)).await;
}

#[tokio::test]
async fn c1_http2_with_prior_knowledge_carries_the_same_exchange() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/call") {
            return fake::sse(format!("data: {}\n\n", fake::result(&req.id(), json!({}))));
        }
        fake::standard(&req)
    })
    .await;
    let builder = builder(&server.url).http2_prior_knowledge(true);
    let mut conn = connect(builder).await;
    handshake(&mut conn).await;
    send(&conn, request(2, "tools/call")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(2)));
    within(conn.close()).await.unwrap();
    let log = server.requests();
    assert!(log.len() >= 4, "{log:#?}");
    assert!(log.iter().all(|r| r.version == http::Version::HTTP_2));
    assert!(
        log.iter()
            .all(|r| r.header("mcp-session-id").is_some() || r.is_post("initialize"))
    );
}

/// 1,000 requests from 16 concurrent callers over one session, against an echo server that
/// answers each POST with an SSE stream: every response reaches its caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c1_thousand_requests_from_16_callers_are_each_answered_to_their_caller() {
    const CALLERS: i64 = 16;
    const REQUESTS: i64 = 1000;
    let server = Fake::start(|req| async move {
        if req.is_post("echo") {
            let body = req.json();
            let event = fake::result(&req.id(), body["params"].clone());
            return fake::sse(format!("id: {}\ndata: {event}\n\n", req.id()));
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;

    type Waiting = Arc<Mutex<HashMap<Id, oneshot::Sender<Message>>>>;
    let waiting: Waiting = Arc::default();
    let sender = conn.sender();
    let dispatcher = tokio::spawn({
        let waiting = waiting.clone();
        async move {
            while let Ok(Some(message)) = conn.recv().await {
                let Message::Response(response) = &message else {
                    continue;
                };
                let id = response.id().cloned().expect("an id");
                let tx = waiting
                    .lock()
                    .unwrap()
                    .remove(&id)
                    .expect("a caller waits for it");
                tx.send(message).unwrap();
            }
        }
    });
    let mut callers = Vec::new();
    for caller in 0..CALLERS {
        let sender = sender.clone();
        let waiting = waiting.clone();
        callers.push(tokio::spawn(async move {
            for n in (caller..REQUESTS).step_by(CALLERS as usize) {
                let id = Id::from(1000 + n);
                let (tx, rx) = oneshot::channel();
                waiting.lock().unwrap().insert(id.clone(), tx);
                let params = to_raw_value(&json!({"caller": caller, "n": n})).unwrap();
                sender
                    .send(Request::new(id.clone(), "echo", Some(params)).into())
                    .await
                    .unwrap();
                let Message::Response(response) = within(rx).await.unwrap() else {
                    panic!("the dispatcher forwards responses only")
                };
                assert_eq!(response.id(), Some(&id));
                let echoed: Value = serde_json::from_str(response.result().unwrap().get()).unwrap();
                assert_eq!(echoed, json!({"caller": caller, "n": n}));
            }
        }));
    }
    for caller in callers {
        tokio::time::timeout(Duration::from_secs(60), caller)
            .await
            .unwrap()
            .unwrap();
    }
    assert!(waiting.lock().unwrap().is_empty());
    let log = server.requests();
    let echoes: Vec<_> = log.iter().filter(|r| r.is_post("echo")).collect();
    assert_eq!(echoes.len(), REQUESTS as usize);
    assert!(
        echoes
            .iter()
            .all(|r| r.header("mcp-session-id") == Some(SESSION))
    );
    dispatcher.abort();
}

#[tokio::test]
async fn every_request_names_its_host() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    let authority = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let log = server.requests();
    assert_eq!(log.len(), 2);
    for req in &log {
        assert_eq!(req.header("host"), Some(authority), "{req:?}");
        assert_eq!(req.headers.get_all("host").iter().count(), 1);
    }
}

#[tokio::test]
async fn every_request_targets_the_path_and_query_alone() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let url = format!("{}?tenant=a", server.url);
    let mut conn = connect(builder(&url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    let log = server.requests();
    assert_eq!(log.len(), 2);
    for req in &log {
        // The origin form of HTTP/1.1 (RFC 9112, 3.2.1), as hyper-util's client sends it.
        assert_eq!(req.uri.scheme(), None, "{req:?}");
        assert_eq!(req.uri.authority(), None, "{req:?}");
        assert_eq!(req.uri.path(), "/mcp");
        assert_eq!(req.uri.query(), Some("tenant=a"));
    }
}

#[tokio::test]
async fn c2_a_callers_connection_is_back_in_the_pool_before_its_response() {
    let server = Fake::start(|req| async move {
        if req.is_post("ping") {
            // Streamed, as servers stream SSE: the end comes after the event.
            let (tx, response) = fake::sse_channel(1);
            let event = format!("data: {}\n\n", fake::result(&req.id(), json!({})));
            tx.send(event.into()).await.unwrap();
            return response;
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    let connected = server.connections();
    // Callers in closed loops, as an application runs them.
    const CALLERS: i64 = 8;
    let callers: Vec<_> = (0..CALLERS)
        .map(|caller| {
            let sender = conn.sender();
            tokio::spawn(async move {
                for n in 0..10 {
                    let ping = Request::new(100 * (caller + 1) + n, "ping", None);
                    sender.call(ping, LIMIT).await.unwrap();
                }
            })
        })
        .collect();
    for caller in callers {
        within(caller).await.unwrap();
    }
    // Each caller's connection was back before its next request: no more than one each.
    let opened = server.connections() - connected;
    assert!(
        opened <= CALLERS as usize,
        "{opened} connections for {CALLERS} callers"
    );
}
