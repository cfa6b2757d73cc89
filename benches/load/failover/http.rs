//! The few HTTP exchanges `mcp-failover` makes with one node at a time: a POST on a fresh
//! connection (plain hyper, HTTP/1.1), and the SSE events of its reply as they arrive.

use std::net::SocketAddr;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// The protocol version the driver's sessions speak.
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";

const SESSION_ID: &str = "mcp-session-id";

/// The reply to a POST: its session id header and its body, read event by event.
#[derive(Debug)]
pub(crate) struct Reply {
    /// `Mcp-Session-Id`, when the reply carries one.
    pub(crate) session: Option<String>,
    body: Incoming,
    /// Bytes received and not yet cut into events.
    pending: Vec<u8>,
}

/// Ends `session` with a DELETE to the node at `addr`.
pub(crate) async fn delete(addr: SocketAddr, session: &str) -> anyhow::Result<()> {
    let mut sender = connect(addr).await?;
    let request = Request::builder()
        .method(Method::DELETE)
        .uri("/mcp")
        .header(HOST, addr.to_string())
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header(SESSION_ID, session)
        .body(Full::new(Bytes::new()))?;
    let status = sender.send_request(request).await?.status();
    if !status.is_success() {
        bail!("DELETE at {addr}: {status}");
    }
    Ok(())
}

/// A new HTTP/1.1 connection to `addr`, its driver spawned.
async fn connect(addr: SocketAddr) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("HTTP handshake")?;
    tokio::spawn(connection);
    Ok(sender)
}

/// POSTs `message` to the node at `addr` (on a connection of its own), in `session` if given,
/// and returns the reply once its head arrived; a status other than 200 or 202 is an error.
pub(crate) async fn post(
    addr: SocketAddr,
    session: Option<&str>,
    message: &Value,
) -> anyhow::Result<Reply> {
    let mut sender = connect(addr).await?;
    let mut request = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(HOST, addr.to_string())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION);
    if let Some(session) = session {
        request = request.header(SESSION_ID, session);
    }
    let body = Full::new(Bytes::from(serde_json::to_vec(message)?));
    let response = sender.send_request(request.body(body)?).await?;
    let status = response.status();
    if status != StatusCode::OK && status != StatusCode::ACCEPTED {
        let body = response.into_body().collect().await?.to_bytes();
        bail!(
            "{addr} answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let session = response
        .headers()
        .get(SESSION_ID)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    Ok(Reply {
        session,
        body: response.into_body(),
        pending: Vec::new(),
    })
}

impl Reply {
    /// The next message of the SSE reply (events without data, such as the priming event,
    /// skipped), or `None` once the reply ends.
    pub(crate) async fn next(&mut self) -> anyhow::Result<Option<Value>> {
        loop {
            if let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.pending.drain(..end + 2).collect();
                let data: Vec<&str> = std::str::from_utf8(&event)?
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue;
                }
                return Ok(Some(serde_json::from_str(&data.join("\n"))?));
            }
            match self.body.frame().await {
                None => return Ok(None),
                Some(frame) => {
                    if let Ok(data) = frame?.into_data() {
                        self.pending.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The reply's one message, for a reply that carries one (JSON or SSE).
    pub(crate) async fn message(mut self) -> anyhow::Result<Value> {
        if let Some(message) = self.next().await? {
            return Ok(message);
        }
        // A JSON reply has no blank line to end an event: it is the whole body.
        let text = std::mem::take(&mut self.pending);
        serde_json::from_slice(&text).context("the reply held no message")
    }
}
