//! Reading the reply to one POSTed request: a JSON body, or an SSE stream that carries it.

use std::time::Instant;

use anyhow::{Context as _, bail, ensure};
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use mcp_jsonrpc::{Body, Id, Message, Response};
use mcp_sse::Scanner;

use crate::measure::Kind;

/// Reads the response to request `id`, and the instant it was parsed. The body is read to its
/// end (so that the connection can carry the next request), but the instant is taken as soon
/// as the response is found: what a client waiting for it would see.
pub(crate) async fn read(
    response: http::Response<Incoming>,
    id: i64,
) -> anyhow::Result<(Kind, Response, Instant)> {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let body = response.into_body();
    match content_type.as_str() {
        "application/json" => {
            let bytes = body.collect().await?.to_bytes();
            let at = Instant::now();
            let message = single(&bytes)?;
            Ok((Kind::Json, expect_response(message, id)?, at))
        }
        "text/event-stream" => {
            let (response, at) = read_sse(body, id).await?;
            Ok((Kind::Sse, response, at))
        }
        other => bail!("unexpected Content-Type {other:?} for request {id}"),
    }
}

/// Scans the SSE body for the response to `id`: other messages on the stream (notifications,
/// requests) are skipped, as are events without data (priming events).
async fn read_sse(mut body: Incoming, id: i64) -> anyhow::Result<(Response, Instant)> {
    let mut scanner = Scanner::new();
    let mut found = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        scanner.feed(&data);
        while let Some(event) = scanner.next_event()? {
            if event.data.is_empty() {
                continue;
            }
            let message = single(event.data.as_bytes())?;
            if let Message::Response(_) = message {
                ensure!(
                    found.is_none(),
                    "a second response on the stream of request {id}"
                );
                found = Some((expect_response(message, id)?, Instant::now()));
            }
        }
    }
    found.with_context(|| format!("the stream of request {id} ended without its response"))
}

fn single(bytes: &[u8]) -> anyhow::Result<Message> {
    match mcp_jsonrpc::parse(bytes) {
        Ok(Body::Single(message)) => Ok(message),
        Ok(Body::Batch(_)) => bail!("a batch where one message was expected"),
        Err(err) => bail!(
            "not JSON-RPC ({err}): {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        ),
    }
}

fn expect_response(message: Message, id: i64) -> anyhow::Result<Response> {
    match message {
        Message::Response(response) if response.id() == Some(&Id::Number(id)) => Ok(response),
        Message::Response(response) => {
            bail!("response to {:?} where {id} was expected", response.id())
        }
        other => bail!(
            "{:?} where the response to {id} was expected",
            other.method()
        ),
    }
}
