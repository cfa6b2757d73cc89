//! The configuration of a client, shared by its connections and every layer below them, and
//! the [`Family`] setting it holds.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use http::header::HeaderMap;

use crate::auth::AuthProvider;
use crate::reconnect::ReconnectPolicy;
use crate::shape::Identity;

/// Which family of the protocol the transport speaks for the messages it shapes itself, set with
/// [`ClientBuilder::family`](crate::ClientBuilder::family).
///
/// Whatever the setting, an application that sends `initialize` runs the session-based
/// lifecycle as it always did (except under [`Family::PerRequest`], which refuses it), and a request
/// whose `params._meta` already declares `io.modelcontextprotocol/protocolVersion` is sent the
/// per-request way: an application (such as rmcp) that speaks the 2026-07-28 protocol itself
/// runs unchanged over the transport. The setting decides what happens to the other requests.
///
/// ```no_run
/// use mcp_jsonrpc::{Message, Request};
/// use mcp_streamable_client::{Client, Family};
/// use mcp_transport::{Connection, Sender, Transport};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let client = Client::builder("http://127.0.0.1:8080/mcp")
///     .family(Family::Auto)
///     .client_info("example", "1.0.0")
///     .build()?;
/// let mut conn = client.clone().connect().await?;
/// // No `initialize`: the transport adds `_meta` and finds out what the server speaks.
/// conn.sender().send(Request::new(1, "tools/list", None).into()).await?;
/// let Some(Message::Response(tools)) = conn.recv().await? else { return Ok(()) };
/// println!("{tools:?}, found {:?}", client.family());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Family {
    /// Find out from the first request (the default). The transport sends it the per-request
    /// way, with the `_meta` members filled in; a success, or a refusal only a 2026-07-28
    /// server gives, means the endpoint speaks that protocol. A -32022 listing only
    /// session-based versions, or any other 400, 404 or 405, means it does not: the transport
    /// runs the session-based lifecycle itself (`initialize` with the
    /// [`client_info`](crate::ClientBuilder::client_info) and
    /// [`client_capabilities`](crate::ClientBuilder::client_capabilities), then
    /// `notifications/initialized`) and sends the request in that session. The answer is
    /// remembered by the [`Client`](crate::Client), for every connection made from it.
    #[default]
    Auto,
    /// Speak only the 2026-07-28 per-request protocol: every request gets the `_meta` members,
    /// `initialize` and responses are refused, and nothing falls back.
    PerRequest,
    /// Speak only the session-based protocol: messages go as the application wrote them, in the
    /// session its `initialize` starts.
    Session,
}

/// The configuration every connection of a [`Client`](crate::Client) shares.
pub(crate) struct Config {
    pub(crate) url: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) auth: Option<Arc<dyn AuthProvider>>,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) close_timeout: Duration,
    pub(crate) sse_idle_timeout: Option<Duration>,
    pub(crate) standalone: bool,
    pub(crate) max_event_size: usize,
    pub(crate) reconnect: ReconnectPolicy,
    pub(crate) reinitialize: bool,
    pub(crate) legacy_fallback: bool,
    pub(crate) http2_prior_knowledge: bool,
    pub(crate) family: Family,
    /// Who the client says it is, in `_meta` and in the transport's own `initialize` (M7).
    pub(crate) identity: Identity,
    /// Where spans and metrics go (feature `otel`).
    #[cfg(feature = "otel")]
    pub(crate) telemetry: crate::telemetry::Telemetry,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may hold credentials: list only their names.
        let mut d = f.debug_struct("Config");
        d.field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("auth", &self.auth.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("sse_idle_timeout", &self.sse_idle_timeout)
            .field("standalone", &self.standalone)
            .field("max_event_size", &self.max_event_size)
            .field("reconnect", &self.reconnect)
            .field("reinitialize", &self.reinitialize)
            .field("legacy_fallback", &self.legacy_fallback)
            .field("http2_prior_knowledge", &self.http2_prior_knowledge)
            .field("family", &self.family)
            .field("identity", &self.identity);
        #[cfg(feature = "otel")]
        d.field("telemetry", &self.telemetry);
        d.finish()
    }
}
