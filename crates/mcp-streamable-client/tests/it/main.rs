//! Integration tests of `mcp-streamable-client`: each C row of `SPEC.md`, and M7, against fake
//! servers that behave, and fake servers that do not.

mod calls;
mod errors;
mod fake;
mod legacy;
mod modern;
#[cfg(feature = "otel")]
mod otel;
mod our_server;
mod over;
mod params;
mod proofs;
mod recovery;
mod request_state;
mod sending;
mod session;
mod streams;
#[cfg(feature = "rustls")]
mod tls;
mod wire;

use std::future::Future;
use std::time::Duration;

use mcp_jsonrpc::{Message, Notification, Request, Response, to_raw_value};
use mcp_streamable_client::{Client, ClientBuilder, ClientConnection, Error, ReconnectPolicy};
use mcp_transport::{Connection, Sender, Transport};

/// How long any one await may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(5);

/// Awaits `f`, failing the test if it takes longer than [`LIMIT`].
async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("timed out")
}

/// A builder for `url` with short timeouts and quick reconnections.
fn builder(url: &str) -> ClientBuilder {
    Client::builder(url)
        .request_timeout(Duration::from_secs(3))
        .close_timeout(Duration::from_secs(1))
        .reconnect(
            ReconnectPolicy::default()
                .initial_delay(Duration::from_millis(10))
                .max_delay(Duration::from_millis(50)),
        )
}

async fn connect(builder: ClientBuilder) -> ClientConnection {
    builder.build().unwrap().connect().await.unwrap()
}

fn initialize(id: i64) -> Message {
    let params = to_raw_value(&serde_json::json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "it", "version": "0"}
    }))
    .unwrap();
    Request::new(id, "initialize", Some(params)).into()
}

fn request(id: i64, method: &str) -> Message {
    Request::new(id, method, None).into()
}

fn initialized() -> Message {
    Notification::new("notifications/initialized", None).into()
}

async fn send(conn: &ClientConnection, message: Message) -> Result<(), mcp_transport::Error> {
    within(conn.sender().send(message.into())).await
}

/// The next message; fails on an error, the end, or a wait past [`LIMIT`].
async fn recv(conn: &mut ClientConnection) -> Message {
    within(conn.recv())
        .await
        .unwrap()
        .expect("connection ended")
}

/// The next message, which must be a response.
async fn recv_response(conn: &mut ClientConnection) -> Response {
    match recv(conn).await {
        Message::Response(r) => r,
        other => panic!("expected a response, got {other:?}"),
    }
}

/// Initialises: `initialize`, its result, then `notifications/initialized`.
async fn handshake(conn: &mut ClientConnection) {
    send(conn, initialize(1)).await.unwrap();
    let init = recv_response(conn).await;
    assert!(!init.is_error(), "{init:?}");
    send(conn, initialized()).await.unwrap();
}

/// The client's error inside a transport error.
fn cause(err: &mcp_transport::Error) -> &Error {
    std::error::Error::source(err)
        .and_then(|s| s.downcast_ref::<Error>())
        .unwrap_or_else(|| panic!("no client error in {err:?}"))
}

/// Asserts that nothing arrives for `wait`, waited on the test clock, paused for the while:
/// every timer due in that time fires, in order, without the test waiting in real time.
async fn assert_quiet(conn: &mut ClientConnection, wait: Duration) {
    tokio::time::pause();
    let got = tokio::time::timeout(wait, conn.recv()).await;
    tokio::time::resume();
    if let Ok(got) = got {
        panic!("expected nothing, got {got:?}");
    }
}

/// Lets `wait` pass on the test clock, paused for the while, so that whatever was due in that
/// time (a retry, a reconnection) has happened when it returns, without real waiting.
async fn settle(wait: Duration) {
    tokio::time::pause();
    tokio::time::sleep(wait).await;
    tokio::time::resume();
}
