//! What the transport knows of the session: its id, the negotiated protocol version, and the
//! messages that started it.

use std::borrow::Cow;
use std::sync::Arc;

use http::HeaderValue;
use mcp_jsonrpc::{Notification, RawValue, Request};
use serde::Deserialize;

use crate::legacy::Legacy;

/// The session headers sent on every request once known (C1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SessionHeaders {
    /// `Mcp-Session-Id`, from the answer to `initialize`.
    pub(crate) id: Option<HeaderValue>,
    /// `MCP-Protocol-Version`, from the result of `initialize`.
    pub(crate) version: Option<HeaderValue>,
}

/// Which transport the server speaks.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// Nothing has been accepted yet.
    Unknown,
    /// The Streamable HTTP transport.
    Streamable,
    /// The 2024-11-05 HTTP+SSE transport (C10).
    Legacy(Arc<Legacy>),
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

    pub(crate) fn legacy(&self) -> Option<Arc<Legacy>> {
        match &self.mode {
            Mode::Legacy(legacy) => Some(legacy.clone()),
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
