//! The request log (H4): one `tracing` event for each HTTP request the endpoint answers, at
//! `debug` under the target [`TARGET`], off unless a subscriber asks for it
//! (`RUST_LOG=info,mcp_streamable_server::requests=debug`). It names the HTTP method, the
//! session (the request's `Mcp-Session-Id`, or the one an `initialize` was given), the JSON-RPC
//! method and id of a POST's first message, the status, a refusal's reason, and the time to the
//! answer's head: an SSE answer's line is written when its stream begins, not when it ends.
//!
//! Disabled, it costs a request one look at the callsite's cached interest.

use std::time::Instant;

use http::{Method, Request, Response};
use mcp_jsonrpc::{Body, Message};

use crate::protocol::MCP_SESSION_ID;

/// The target of the request log's events.
pub(crate) const TARGET: &str = "mcp_streamable_server::requests";

/// Whether a subscriber wants the request log.
fn enabled() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::DEBUG)
}

/// A request being answered, when the log is on.
pub(crate) struct Logged {
    method: Method,
    session: Option<http::HeaderValue>,
    started: Instant,
}

/// What a POST's body was: its first message's method and id (`batch` with the count for a
/// batch), put in the answer's extensions for the log line.
#[derive(Clone)]
pub(crate) struct Called {
    method: String,
    id: Option<String>,
}

impl Logged {
    /// The request's side of its line, if the log is on.
    pub(crate) fn begin<B>(request: &Request<B>) -> Option<Logged> {
        enabled().then(|| Logged {
            method: request.method().clone(),
            session: request.headers().get(MCP_SESSION_ID).cloned(),
            started: Instant::now(),
        })
    }

    /// Writes the line for `response`, refused for `refusal` if it was.
    pub(crate) fn end<B>(self, response: &Response<B>, refusal: Option<&str>) {
        let session = self
            .session
            .as_ref()
            .or_else(|| response.headers().get(MCP_SESSION_ID))
            .and_then(|v| v.to_str().ok());
        let called = response.extensions().get::<Called>();
        tracing::debug!(
            target: TARGET,
            method = %self.method,
            session_id = session,
            mcp_method = called.map(|c| c.method.as_str()),
            request_id = called.and_then(|c| c.id.as_deref()),
            status = response.status().as_u16(),
            refused = refusal,
            elapsed_us = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            "request answered"
        );
    }
}

impl Called {
    /// What `body` calls, if the log is on.
    pub(crate) fn of(body: &Body) -> Option<Called> {
        if !enabled() {
            return None;
        }
        let first = body.messages().first()?;
        let (method, id) = match first {
            Message::Request(r) => (r.method.clone(), Some(r.id.to_string())),
            Message::Notification(n) => (n.method.clone(), None),
            Message::Response(r) => ("response".to_owned(), r.id().map(ToString::to_string)),
        };
        Some(match body {
            Body::Batch(messages) => Called {
                method: format!("batch of {} from {method}", messages.len()),
                id,
            },
            Body::Single(_) => Called { method, id },
        })
    }

    /// Puts what was called into `response`, for its log line.
    pub(crate) fn attach<B>(called: Option<Called>, response: &mut Response<B>) {
        if let Some(called) = called {
            response.extensions_mut().insert(called);
        }
    }
}
