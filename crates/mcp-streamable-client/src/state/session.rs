//! What the transport knows of the session: its id, the negotiated protocol version, the
//! messages that started it, and the state of the 2024-11-05 HTTP+SSE fallback (C10).

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use http::{HeaderValue, Uri};
use mcp_jsonrpc::{Id, Message, Notification, RawValue, Request};
use serde::Deserialize;
use tokio::sync::oneshot;

use crate::wire::SessionHeaders;

/// Which transport the server speaks.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// Nothing has been accepted yet.
    Unknown,
    /// The Streamable HTTP transport.
    Streamable,
    /// The 2024-11-05 HTTP+SSE transport (C10).
    HttpSse(Arc<HttpSse>),
}

/// The state of the session, behind the connection's lock.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) headers: SessionHeaders,
    /// The `initialize` request sent last, re-sent to start a new session (C6).
    pub(crate) initialize: Option<Request>,
    /// The `notifications/initialized` sent last, re-sent after it.
    pub(crate) initialized: Option<Notification>,
    pub(crate) mode: Mode,
}

impl Session {
    pub(crate) fn new() -> Self {
        Session {
            headers: SessionHeaders::default(),
            initialize: None,
            initialized: None,
            mode: Mode::Unknown,
        }
    }

    /// Whether the connection runs the session-based lifecycle: an `initialize` was sent, by
    /// the application or by the transport for it, or the server's transport is known.
    pub(crate) fn is_started(&self) -> bool {
        self.initialize.is_some() || !matches!(self.mode, Mode::Unknown)
    }

    /// The state of the HTTP+SSE fallback, when the server speaks only that (C10).
    pub(crate) fn http_sse(&self) -> Option<Arc<HttpSse>> {
        match &self.mode {
            Mode::HttpSse(http_sse) => Some(http_sse.clone()),
            _ => None,
        }
    }
}

/// The method of the notification that ends initialisation, after which the standalone stream
/// opens (C3).
pub(crate) const INITIALIZED: &str = "notifications/initialized";

/// The `protocolVersion` of an `initialize` result, as a header value; only that member is
/// read, the rest of the result stays raw.
pub(crate) fn protocol_version(result: &RawValue) -> Option<HeaderValue> {
    #[derive(Deserialize)]
    struct InitializeResult<'a> {
        #[serde(rename = "protocolVersion", borrow, default)]
        protocol_version: Option<Cow<'a, str>>,
    }
    let parsed: InitializeResult<'_> = serde_json::from_str(result.get()).ok()?;
    HeaderValue::from_str(&parsed.protocol_version?).ok()
}

/// The state of a connection speaking the 2024-11-05 HTTP+SSE transport (C10).
#[derive(Debug)]
pub(crate) struct HttpSse {
    /// Where messages are posted, on the server's origin.
    pub(crate) endpoint: Uri,
    /// The requests whose responses have not come on the stream yet.
    pending: Mutex<HashSet<Id>>,
    /// The `initialize` the transport sent for the application (M7): its response is not
    /// delivered, the sender hears whether it was a result.
    own_initialize: Mutex<Option<(Id, oneshot::Sender<bool>)>>,
}

impl HttpSse {
    /// The state of a connection posting to `endpoint`.
    pub(crate) fn new(endpoint: Uri) -> HttpSse {
        HttpSse {
            endpoint,
            pending: Mutex::default(),
            own_initialize: Mutex::default(),
        }
    }

    /// Forgets the transport's own `initialize`, if one waits: dropping its sender tells the
    /// transport it got no answer. Returns its id.
    pub(crate) fn forget_own_initialize(&self) -> Option<Id> {
        let mut own = self
            .own_initialize
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        own.take().map(|(id, _)| id)
    }

    pub(crate) fn pending(&self) -> std::sync::MutexGuard<'_, HashSet<Id>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The response to the request `id` is the transport's: `done` hears whether it was an
    /// `initialize` result.
    pub(crate) fn expect_initialize(&self, id: Id, done: oneshot::Sender<bool>) {
        *self
            .own_initialize
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((id, done));
    }

    /// Takes the response `msg` if it answers the transport's own `initialize`.
    pub(crate) fn take_own(&self, msg: &Message) -> bool {
        let Message::Response(response) = msg else {
            return false;
        };
        let mut own = self
            .own_initialize
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if own.as_ref().map(|(id, _)| id) != response.id() {
            return false;
        }
        if let Some((_, done)) = own.take() {
            let ok = response.result().ok().and_then(protocol_version).is_some();
            let _ = done.send(ok);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn reads_only_the_protocol_version() {
        let result = raw(
            r#"{"capabilities":{"tools":{}},"protocolVersion":"2025-06-18","serverInfo":{"name":"x"}}"#,
        );
        assert_eq!(
            protocol_version(&result),
            Some(HeaderValue::from_static("2025-06-18"))
        );
        assert_eq!(protocol_version(&raw(r#"{"capabilities":{}}"#)), None);
        assert_eq!(protocol_version(&raw(r#"{"protocolVersion":7}"#)), None);
        assert_eq!(protocol_version(&raw(r#""2025-06-18""#)), None);
        assert_eq!(
            protocol_version(&raw(r#"{"protocolVersion":"a\nb"}"#)),
            None
        );
    }
}
