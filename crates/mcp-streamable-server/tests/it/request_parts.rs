//! Each client message reaches the application with the parts of the HTTP request that
//! carried it (`Connection::recv_with_request`).

use std::sync::Arc;

use mcp_jsonrpc::{Message, Response};
use mcp_streamable_server::{Config, ServerConnection};
use mcp_transport::{Connection, Sender};
use serde_json::json;
use tokio::sync::mpsc;

use crate::harness::*;

/// What the application saw of one message: its method, the `x-tag` header of its request,
/// and the request's parts themselves.
type Seen = (String, String, Arc<http::request::Parts>);

/// A session that answers every request with `{"protocolVersion": "2025-03-26"}` and reports
/// each message it receives.
async fn reporting(mut conn: ServerConnection, seen: mpsc::UnboundedSender<Seen>) {
    let sender = conn.sender();
    while let Ok(Some(received)) = conn.recv_with_request().await {
        let parts = received
            .request
            .expect("every client message comes with its request");
        let tag = parts
            .headers
            .get("x-tag")
            .map_or("", |v| v.to_str().unwrap_or(""));
        let method = received.message.method().unwrap_or("").to_owned();
        let _ = seen.send((method, tag.to_owned(), Arc::clone(&parts)));
        if let Message::Request(request) = received.message {
            let result = mcp_jsonrpc::to_raw_value(&json!({"protocolVersion": "2025-03-26"}));
            let _ = sender
                .send(Response::success(request.id, result.unwrap()).into())
                .await;
        }
    }
}

fn tagged(session: Option<&str>, tag: &'static str) -> http::request::Builder {
    post(session).header("x-tag", tag)
}

#[tokio::test]
async fn every_message_comes_with_the_parts_of_its_own_post() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let service = service_with(Config::default(), move |conn, _parts| {
        reporting(conn, tx.clone())
    });
    let init = service
        .handle(request(
            tagged(None, "init"),
            initialize_body(0, "2025-03-26"),
        ))
        .await;
    let session = session_id(init.headers()).unwrap();
    sse_events(init, 1).await;
    let note = service
        .handle(request(
            tagged(Some(&session), "note"),
            note("notifications/initialized"),
        ))
        .await;
    assert_eq!(note.status(), 202);
    let batch = format!("[{},{}]", ping(1), ping(2));
    let answered = service
        .handle(request(tagged(Some(&session), "batch"), batch))
        .await;
    assert_eq!(sse_events(answered, 2).await.len(), 2);

    let mut got = Vec::new();
    while let Ok(one) = seen.try_recv() {
        got.push(one);
    }
    let labels: Vec<(&str, &str)> = got
        .iter()
        .map(|(m, t, _)| (m.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("initialize", "init"),
            ("notifications/initialized", "note"),
            ("ping", "batch"),
            ("ping", "batch"),
        ]
    );
    // The messages of one POST share its parts; the session's id is in them.
    assert!(Arc::ptr_eq(&got[2].2, &got[3].2));
    assert_eq!(got[2].2.headers["mcp-session-id"], session.as_str());
}

/// N9: a client's claim to be a node forwarding a request is dropped before anything reads it:
/// the request is served as any other, and its application never sees the claim.
#[tokio::test]
async fn a_clients_forward_headers_are_dropped() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let service = service_with(Config::default(), move |conn, _parts| {
        reporting(conn, tx.clone())
    });
    let forged = |session: Option<&str>| {
        tagged(session, "forged")
            .header("mcp-forward", "1 YQ 1 0 99999999999999 id - c2ln")
            .header("mcp-forward-after", "1_5")
    };
    let init = service
        .handle(request(forged(None), initialize_body(0, "2025-03-26")))
        .await;
    assert_eq!(init.status(), 200);
    let session = session_id(init.headers()).unwrap();
    sse_events(init, 1).await;
    let answered = service
        .handle(request(forged(Some(&session)), ping(1)))
        .await;
    assert_eq!(sse_events(answered, 1).await.len(), 1);
    let (_, tag, parts) = seen.recv().await.unwrap();
    assert_eq!(tag, "forged");
    assert!(!parts.headers.contains_key("mcp-forward"));
    assert!(!parts.headers.contains_key("mcp-forward-after"));
    // The resend's header alone is a client's claim too.
    let lone = tagged(None, "lone").header("mcp-forward-after", "1_5");
    let init = service
        .handle(request(lone, initialize_body(0, "2025-03-26")))
        .await;
    assert_eq!(init.status(), 200);
    sse_events(init, 1).await;
    // What the forged session's messages reported first, then the lone one's.
    let lone = (0..3)
        .map(|_| seen.try_recv().expect("a report of each message"))
        .find(|(_, tag, _)| tag == "lone")
        .expect("the lone session's initialize is reported");
    assert!(!lone.2.headers.contains_key("mcp-forward-after"));
}
