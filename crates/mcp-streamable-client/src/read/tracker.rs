//! Tracking the request a reply must answer: its response goes to the application under the
//! id the application gave it, `initialize`'s result gives the protocol version, and a reply that
//! ends without the response answers the request with an error (C5).

use mcp_jsonrpc::{ErrorObject, Id, Message, Response as RpcResponse};
use tokio::sync::oneshot;

use crate::state::{Inner, protocol_version};
use crate::wire::SessionHeaders;

/// The request a reply must answer, if any, and what to do when its response arrives.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    /// The request still waiting for its response (a POST carries one message).
    waiting: Option<Id>,
    /// The id the application gave the request, once the transport re-sent it under another
    /// (M7): its response is delivered under this one.
    original: Option<Id>,
    /// Set when the request is `initialize`: its result gives the protocol version.
    init: Option<InitWatch>,
}

/// Watches for the result of `initialize`.
#[derive(Debug)]
struct InitWatch {
    /// The transport sent this `initialize` itself (a new session, C6): its response is not
    /// the application's.
    internal: bool,
    /// Told whether the result arrived (true) or an error did (false).
    done: Option<oneshot::Sender<bool>>,
}

impl Tracker {
    /// Tracks the response to `waiting`, if the message was a request.
    pub(crate) fn new(waiting: Option<Id>) -> Tracker {
        Tracker {
            waiting,
            original: None,
            init: None,
        }
    }

    /// The request is `initialize`: adopt the protocol version of its result (C1). When
    /// `internal`, the response is not delivered, and `done` hears how it went.
    pub(crate) fn initialize(
        mut self,
        internal: bool,
        done: Option<oneshot::Sender<bool>>,
    ) -> Self {
        self.init = Some(InitWatch { internal, done });
        self
    }

    /// Whether nothing is waiting any more.
    pub(crate) fn is_done(&self) -> bool {
        self.waiting.is_none()
    }

    /// The request was sent again under `id` (M7): its response will carry that id.
    pub(crate) fn resend_as(&mut self, id: Id) {
        if let Some(waiting) = self.waiting.take() {
            self.original.get_or_insert(waiting);
            self.waiting = Some(id);
        }
    }

    /// The id the application knows the waiting request by, which stops waiting.
    fn finish(&mut self) -> Option<Id> {
        let waiting = self.waiting.take()?;
        Some(self.original.take().unwrap_or(waiting))
    }

    /// Notes a message received on the reply to a request sent in `session`; returns the
    /// message to deliver to the application, if any: a response to a re-sent request goes
    /// under the id the application gave it.
    pub(crate) fn observe(
        &mut self,
        inner: &Inner,
        session: &SessionHeaders,
        msg: Message,
    ) -> Option<Message> {
        let Message::Response(response) = msg else {
            return Some(msg);
        };
        if response.id().is_none() || response.id() != self.waiting.as_ref() {
            return Some(response.into());
        }
        let response = match self.finish() {
            Some(original) if response.id() != Some(&original) => match response.into_parts().1 {
                Ok(result) => RpcResponse::success(original, result),
                Err(error) => RpcResponse::error(Some(original), error),
            },
            _ => response,
        };
        let Some(mut watch) = self.init.take() else {
            return Some(response.into());
        };
        let version = response.result().ok().and_then(protocol_version);
        let ok = version.is_some();
        if let Some(version) = version {
            let mut current = inner.session();
            // A reply from a session that has since been replaced says nothing of the new one.
            if current.headers.id == session.id {
                tracing::debug!(?version, "negotiated protocol version");
                current.headers.version = Some(version);
            }
        }
        if let Some(done) = watch.done.take() {
            let _ = done.send(ok);
        }
        (!watch.internal).then(|| response.into())
    }

    /// The response will not come: answer the waiting request with an error response (C5).
    /// Returns false once nobody reads the connection.
    pub(crate) async fn give_up(&mut self, inner: &Inner, reason: &str) -> bool {
        let Some(id) = self.finish() else {
            return true;
        };
        if self.init.take().is_some_and(|w| w.internal) {
            // The new session did not start; the sender waiting on it hears it by `done`.
            tracing::debug!(reason, "no answer to the new session's initialize");
            return true;
        }
        inner.answer_lost(id, reason).await
    }

    /// The server refused the request with a JSON-RPC error (a re-sent one, M7): that is its
    /// response. Returns false once nobody reads the connection.
    pub(crate) async fn refused(&mut self, inner: &Inner, error: ErrorObject) -> bool {
        let Some(id) = self.finish() else {
            return true;
        };
        inner
            .deliver(Ok(RpcResponse::error(Some(id), error).into()))
            .await
    }
}
