//! `mcp-ceiling`: a bare hyper server that answers every POST with a JSON-RPC result, doing
//! the least work that still passes the load generator's checks: the ceiling any MCP server on
//! hyper can approach.
//!
//! ```text
//! mcp-ceiling [--addr 127.0.0.1:0]
//! ```
//!
//! It prints `listening on http://ADDR/mcp` first. It parses nothing: it finds the request's
//! `"id":` and, for a `tools/call`, its `"text":"` by searching the body (the load generator
//! writes both plainly), and writes the reply around them. A notification gets `202
//! Accepted`; `initialize` a fixed result and a fixed `Mcp-Session-Id`; any other request
//! `{"content":[{"type":"text","text":TEXT}]}` in `application/json`. HTTP/1.1,
//! `TCP_NODELAY`.

use std::convert::Infallible;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;

use super::Listen;

const INITIALIZE_RESULT: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"mcp-ceiling","version":"0.0.0"}}"#;

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
    };
    let Ok(body) = std::str::from_utf8(&body) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let Some(id) = after(body, r#""id":"#).map(|rest| {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        &rest[..end]
    }) else {
        // No id: a notification.
        return Ok(status(StatusCode::ACCEPTED));
    };
    let json = if body.contains(r#""method":"initialize""#) {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{INITIALIZE_RESULT}}}"#)
    } else {
        let text = after(body, r#""text":""#)
            .and_then(|rest| rest.split_once('"'))
            .map_or("", |(text, _)| text);
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        )
    };
    let mut response = Response::new(Full::new(Bytes::from(json)));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("mcp-session-id", HeaderValue::from_static("ceiling"));
    Ok(response)
}

/// What follows the first `needle` in `haystack`.
fn after<'a>(haystack: &'a str, needle: &str) -> Option<&'a str> {
    haystack
        .find(needle)
        .map(|at| &haystack[at + needle.len()..])
}

fn status(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::default());
    *response.status_mut() = status;
    response
}

/// A bare hyper server answering each POST with the JSON-RPC result, found by string search.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-ceiling")]
pub struct Args {
    #[command(flatten)]
    /// Where to listen.
    pub listen: Listen,
}

/// Runs `mcp-ceiling`.
pub fn run(args: Args) -> anyhow::Result<()> {
    super::http1(&args.listen, hyper::service::service_fn(answer))
}
