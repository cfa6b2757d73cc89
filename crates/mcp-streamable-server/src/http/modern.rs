//! The per-request family of the 2026-07-28 protocol (M2-M6): no sessions, one request per
//! POST, closing its stream cancels it.
//!
//! A per-request POST, once its `_meta` and headers are checked (`protocol::params`), is served
//! by a connection of its own, like a stateless POST: the application's factory runs once per
//! request and its [`ServerConnection`](crate::ServerConnection) ends with it. The reply is held
//! until the application's first message for it, so that an error answer gets its status (M5):
//! JSON if the response comes first, SSE if a notification does, or if nothing came for one
//! keep-alive period (then the stream keeps the proxies awake, and a later error travels in it
//! with status 200).

use std::sync::Arc;

use http::StatusCode;
use mcp_jsonrpc::{Body, Message, code};

use crate::core::budget::Charge;
use crate::core::session::Lifetime;
use crate::core::session::begin::Begin;
use crate::core::session::reader::JsonWait;
use crate::core::session::state::Posted;
use crate::core::{Error, Session};
use crate::http::app::Server;
use crate::http::error::{Kind, Reject};
use crate::http::reply::sse::SseBody;
use crate::http::reply::{self, ResponseBody};
use crate::protocol::ProtocolVersion;

/// Serves one per-request POST (M2-M6), checked already, in `version`.
pub(crate) async fn serve(
    server: &Server,
    parts: http::request::Parts,
    body: Body,
    version: ProtocolVersion,
    charge: Charge,
) -> Result<http::Response<ResponseBody>, Reject> {
    if body.messages().iter().any(Message::is_initialize) {
        return Err(Reject::rpc(
            code::METHOD_NOT_FOUND,
            format!(
                "initialize is not a method of protocol version {version}: send requests \
                 directly, each with its params._meta"
            ),
        ));
    }
    let (session, connection) = server.shared.start_transient(Lifetime::Request(version))?;
    let request = server.start_transient(connection, parts, session.span.clone());
    // Until the reply is settled, dropping this future (the client went away) cancels the
    // request: the reader does it once it exists, this guard before.
    let mut guard = CancelOnDrop(Some(Arc::clone(&session)));
    let Begin::Accepted(accepted) = session.begin(&body, None, None, None)? else {
        return Err(ended_without_answer());
    };
    let reader = match accepted.deliver(Posted::new(request, body, charge)).await {
        Ok(reader) => reader,
        Err(Error::SessionNotFound) => return Err(ended_without_answer()),
        Err(other) => return Err(other.into()),
    };
    let Some(reader) = reader else {
        // A notification: delivered; the connection ends once the application has read it.
        return Ok(reply::empty(StatusCode::ACCEPTED));
    };
    let mut sse = SseBody::new(reader);
    let first = match server.shared.config.keep_alive {
        Some(period) => tokio::time::timeout(period, sse.reader_mut().wait_json())
            .await
            .unwrap_or(Ok(None)),
        None => sse.reader_mut().wait_json().await,
    };
    match first {
        Ok(Some(responses)) => {
            let response = responses.into_messages().last().unwrap_or_default();
            Ok(reply::json_with_status(response))
        }
        Ok(None) => {
            guard.0 = None;
            Ok(reply::sse(sse))
        }
        Err(JsonWait::Closed | JsonWait::Moved) => Err(ended_without_answer()),
    }
}

fn ended_without_answer() -> Reject {
    Reject::new(
        Kind::Internal,
        "the server's application ended this request without answering it",
    )
}

/// Cancels a per-request session's request when dropped, unless disarmed.
struct CancelOnDrop(Option<Arc<Session>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            session.cancel_detached();
        }
    }
}
