//! `ClientSender::call`: a request and its own response, for applications without an SDK.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mcp_jsonrpc::{Id, Message};
use mcp_streamable_client::Family;
use serde_json::json;
use tokio::sync::mpsc;

use crate::fake::{self, Fake};
use crate::*;

/// A fake whose `tools/call` replies with an event stream: a progress notification, then the
/// response; or, when `hold`, a stream kept open (its sender in the returned list) and silent.
async fn tool_server(hold: bool) -> (Fake, Arc<Mutex<Vec<mpsc::Sender<Bytes>>>>) {
    let held = Arc::new(Mutex::new(Vec::new()));
    let server = Fake::start({
        let held = held.clone();
        move |req| {
            let held = held.clone();
            async move {
                if !req.is_post("tools/call") {
                    return fake::standard(&req);
                }
                if hold {
                    let (tx, response) = fake::sse_channel(4);
                    held.lock().unwrap().push(tx);
                    return response;
                }
                let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": 1, "progress": 1}});
                let result = fake::result(&req.id(), json!({"done": true}));
                fake::sse(format!("data: {progress}\n\ndata: {result}\n\n"))
            }
        }
    })
    .await;
    (server, held)
}

fn session_builder(url: &str) -> ClientBuilder {
    builder(url)
        .family(Family::Session)
        .standalone_stream(false)
        .sse_idle_timeout(None)
}

#[tokio::test]
async fn a_call_gets_its_response_and_recv_the_rest() {
    let (server, _held) = tool_server(false).await;
    let mut conn = connect(session_builder(&server.url)).await;
    handshake(&mut conn).await;
    let call = Request::new(7, "tools/call", None);
    let response = within(conn.sender().call(call, LIMIT)).await.unwrap();
    assert_eq!(response.id(), Some(&Id::from(7)));
    assert!(!response.is_error(), "{response:?}");
    match recv(&mut conn).await {
        Message::Notification(n) => assert_eq!(n.method, "notifications/progress"),
        other => panic!("expected the progress notification, got {other:?}"),
    }
    // The response went to the caller only.
    assert_quiet(&mut conn, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_call_times_out_and_a_late_response_goes_to_recv() {
    let (server, held) = tool_server(true).await;
    let mut conn = connect(session_builder(&server.url)).await;
    handshake(&mut conn).await;
    let sender = conn.sender();
    let call = tokio::spawn(async move {
        let request = Request::new(8, "tools/call", None);
        sender.call(request, Duration::from_secs(30)).await
    });
    server
        .wait_for(|log| log.iter().any(|r| r.is_post("tools/call")))
        .await;
    // The half minute passes on the test clock; the POST's exchange is over.
    tokio::time::pause();
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    tokio::time::resume();
    let tx = held.lock().unwrap()[0].clone();
    let late = fake::result(&json!(8), json!({}));
    tx.send(format!("data: {late}\n\n").into()).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(8)));
}

#[tokio::test]
async fn a_call_fails_when_the_connection_closes() {
    let (server, _held) = tool_server(true).await;
    let mut conn = connect(session_builder(&server.url)).await;
    handshake(&mut conn).await;
    let sender = conn.sender();
    let call = tokio::spawn(async move {
        let request = Request::new(9, "tools/call", None);
        sender.call(request, LIMIT).await
    });
    server
        .wait_for(|log| log.iter().any(|r| r.is_post("tools/call")))
        .await;
    within(conn.close()).await.unwrap();
    let err = within(call).await.unwrap().unwrap_err();
    assert!(!err.is_timeout(), "{err:?}");
    assert!(conn.sender().is_closed());
}
