//! What a connection tells its telemetry (feature `otel`): the requests it sends and the
//! responses it delivers, where each went (the session, the version), and its session's life.

use mcp_jsonrpc::{Id, Message, Response};
use mcp_streamable_protocol::ProtocolVersion;

use crate::config::Family;
use crate::state::{Found, Inner};
use crate::telemetry::operation::Placement;

impl Inner {
    /// Where the connection's requests go now: the session and the version it speaks, or the
    /// per-request version found or set.
    fn placement(&self) -> Placement {
        let header = |v: &Option<http::HeaderValue>| {
            v.as_ref().and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        {
            let session = self.session();
            if session.is_started() {
                return Placement {
                    session: header(&session.headers.id),
                    version: header(&session.headers.version),
                };
            }
        }
        let version = match (self.discovery.found(), self.config().family) {
            (Some(Found::PerRequest(version)), _) => Some(version),
            (_, Family::PerRequest) => Some(ProtocolVersion::LATEST_PER_REQUEST),
            _ => None,
        };
        Placement {
            session: None,
            version: version.map(|v| v.as_str().to_owned()),
        }
    }

    /// The application sends `message` (whose `_meta` declares `declared`, if anything): its
    /// span begins and its context goes into `_meta`.
    pub(crate) fn began(&self, message: &mut Message, declared: Option<String>) {
        self.operations
            .begin(message, declared, || self.placement());
    }

    /// `response` is delivered: the span of the request it answers ends.
    pub(crate) fn answered(&self, response: &Response) {
        self.operations.answer(response, || self.placement());
    }

    /// The request `id` gets no response, for the reason `kind`.
    pub(crate) fn failed(&self, id: &Id, kind: &str) {
        self.operations.fail(id, kind, || self.placement());
    }

    /// A session began with the answer to its `initialize`; the one before, if any, ended.
    pub(crate) fn session_began(&self, before: Option<&str>) {
        self.life.begin(&self.operations.telemetry, before);
    }

    /// The server said the session expired (404), and no new one replaces it.
    pub(crate) fn session_expired(&self) {
        let version = self.placement().version;
        self.life
            .end(&self.operations.telemetry, version.as_deref());
    }

    /// The connection closed: its requests in flight and its session end.
    pub(crate) fn ended(&self) {
        let placement = self.placement();
        self.operations.unanswered(&placement);
        self.life
            .end(&self.operations.telemetry, placement.version.as_deref());
    }
}
