//! C10: falling back to the 2024-11-05 HTTP+SSE transport.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::Method;
use mcp_jsonrpc::Id;
use mcp_streamable_client::LOST_RESPONSE_CODE;
use serde_json::json;
use tokio::sync::mpsc;

use crate::fake::{self, Fake};
use crate::*;

/// A 2024-11-05 server: GET on `/mcp` opens the event stream, whose `endpoint` event names
/// `/messages?sessionId=x`; POSTs there get 202 and their replies come on the stream, except
/// for `never` requests, which are not answered. POST on `/mcp` is 405.
async fn legacy_server() -> (Fake, Arc<Mutex<Option<mpsc::Sender<Bytes>>>>) {
    let stream: Arc<Mutex<Option<mpsc::Sender<Bytes>>>> = Arc::default();
    let server = Fake::start({
        let stream = stream.clone();
        move |req| {
            let stream = stream.clone();
            async move {
                match (req.method.clone(), req.uri.path()) {
                    (Method::GET, "/mcp") => {
                        let (tx, response) = fake::sse_channel(16);
                        tx.send(Bytes::from_static(
                            b"event: endpoint\ndata: /messages?sessionId=x\n\n",
                        ))
                        .await
                        .unwrap();
                        *stream.lock().unwrap() = Some(tx);
                        response
                    }
                    (Method::POST, "/messages") => {
                        assert_eq!(req.uri.query(), Some("sessionId=x"));
                        let id = req.id();
                        let reply = match req.rpc().as_deref() {
                            Some("initialize") => Some(fake::init_result(&id)),
                            Some("never") | None => None,
                            Some(_) if id.is_null() => None,
                            Some(m) => Some(fake::result(&id, json!({"method": m}))),
                        };
                        if let Some(reply) = reply {
                            let tx = stream.lock().unwrap().clone().unwrap();
                            tx.send(Bytes::from(format!("event: message\ndata: {reply}\n\n")))
                                .await
                                .unwrap();
                        }
                        fake::answer(202, "text/plain", "Accepted")
                    }
                    _ => fake::status(405, "method not allowed"),
                }
            }
        }
    })
    .await;
    (server, stream)
}

#[tokio::test]
async fn c10_falls_back_to_http_sse_when_the_first_post_is_refused() {
    let (server, stream) = legacy_server().await;
    let mut conn = connect(builder(&server.url)).await;
    handshake(&mut conn).await;
    assert!(conn.is_http_sse());
    send(&conn, request(2, "tools/list")).await.unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(2)));
    assert!(!response.is_error());

    let log = server.requests();
    let seen: Vec<_> = log
        .iter()
        .map(|r| (r.method.clone(), r.uri.path().to_owned()))
        .collect();
    assert_eq!(
        seen,
        [
            (Method::POST, "/mcp".to_owned()),
            (Method::GET, "/mcp".to_owned()),
            (Method::POST, "/messages".to_owned()),
            (Method::POST, "/messages".to_owned()),
            (Method::POST, "/messages".to_owned()),
        ]
    );
    assert_eq!(log[1].header("accept"), Some("text/event-stream"));
    assert!(log.iter().all(|r| r.header("mcp-session-id").is_none()));
    assert!(log[2].is_post("initialize") && log[3].is_post("notifications/initialized"));

    // The stream ends with a request unanswered: it gets an error, then the connection ends.
    send(&conn, request(3, "never")).await.unwrap();
    stream.lock().unwrap().take();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(3)));
    assert_eq!(response.result().unwrap_err().code, LOST_RESPONSE_CODE);
    assert_eq!(within(conn.recv()).await.unwrap(), None);
    assert!(
        send(&conn, request(4, "ping"))
            .await
            .unwrap_err()
            .is_closed()
    );
}

#[tokio::test]
async fn c10_without_the_fallback_the_first_error_surfaces() {
    let (server, _stream) = legacy_server().await;
    let conn = connect(builder(&server.url).legacy_fallback(false)).await;
    let err = send(&conn, initialize(1)).await.unwrap_err();
    assert_eq!(cause(&err).status().map(|s| s.as_u16()), Some(405));
    assert_eq!(server.count(Method::GET), 0);
}

#[tokio::test]
async fn c10_a_server_speaking_neither_transport_reports_the_posts_error() {
    let server = Fake::start(|req| async move {
        if req.method == Method::POST {
            return fake::status(400, "bad initialize params");
        }
        fake::status(405, "no GET here")
    })
    .await;
    let conn = connect(builder(&server.url)).await;
    let err = send(&conn, initialize(1)).await.unwrap_err();
    assert_eq!(cause(&err).status().map(|s| s.as_u16()), Some(400));
    assert_eq!(cause(&err).body(), Some("bad initialize params"));
    assert_eq!(server.count(Method::GET), 1);
}
