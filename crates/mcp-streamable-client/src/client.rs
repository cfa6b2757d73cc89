//! [`Client`] and its [`ClientBuilder`]: the public face that configures the transport.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_transport::Transport;

use crate::auth::AuthProvider;
use crate::config::{Config, Family};
use crate::connection::ClientConnection;
use crate::error::{Error, Kind};
use crate::reconnect::ReconnectPolicy;
use crate::shape::Identity;
use crate::state::Discovery;
use crate::wire::Http;

/// How long connecting to the server may take: 10 s, well beyond a healthy TCP and TLS
/// handshake, so that an unreachable server fails the send instead of hanging it.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the server may take to answer a request (its status and headers, and the whole
/// body when it is JSON): 60 s. A server that streams its reply as SSE answers at once, so this
/// bounds only JSON replies, which a slow tool call can delay; raise it for such servers.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long closing waits for the server to answer the DELETE that ends the session: 5 s, so
/// that an unresponsive server cannot hold a shutting-down client (C8).
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest SSE event or JSON body the transport buffers: 16 MiB, the SSE layer's default.
/// MCP messages can be large (a tool result embedding a file), but a server must not be able to
/// make the client buffer without limit (C7).
pub const DEFAULT_MAX_EVENT_SIZE: usize = mcp_sse::DEFAULT_MAX_EVENT_SIZE;

/// How long an SSE stream may stay silent before the transport treats it as broken and resumes
/// it: 60 s, four periods of the 15 s keep-alive comment a server sends on an idle stream (this
/// project's server does, S15), so that keep-alives hold a healthy stream open while a server
/// that holds one open in silence does not keep its caller waiting forever. The same bound as
/// [`DEFAULT_REQUEST_TIMEOUT`] puts on a JSON reply.
pub const DEFAULT_SSE_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The client name the transport declares when the application names none
/// ([`ClientBuilder::client_info`]): the crate's, so that a server's logs say which transport
/// spoke.
const DEFAULT_CLIENT_NAME: &str = env!("CARGO_PKG_NAME");
/// The client version declared with [`DEFAULT_CLIENT_NAME`]: the crate's.
const DEFAULT_CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A Streamable HTTP client for one MCP endpoint: [`connect`](Transport::connect) it to get a
/// [`ClientConnection`].
///
/// Cheap to clone; clones share one HTTP connection pool, and what the first request found out
/// about the endpoint's [`Family`]. Build one with [`Client::builder`].
#[derive(Clone, Debug)]
pub struct Client {
    pub(crate) http: Arc<Http>,
    discovery: Arc<Discovery>,
}

impl Client {
    /// A builder for a client of the MCP endpoint at `url` (`http` or `https`).
    pub fn builder(url: impl AsRef<str>) -> ClientBuilder {
        ClientBuilder::new(url.as_ref())
    }

    /// A client of `url` with the default configuration.
    pub fn new(url: impl AsRef<str>) -> Result<Client, Error> {
        Client::builder(url).build()
    }

    /// The protocol spoken to the endpoint for the messages the transport shapes (M7): the
    /// pinned [`Family`], or what [`Family::Auto`] found with the first request of any connection
    /// made from this client (`None` before that). Connections made later go straight to it.
    pub fn family(&self) -> Option<Family> {
        self.discovery.family(self.http.config.family)
    }
}

impl Transport for Client {
    type Connection = ClientConnection;

    /// Opens a connection. Nothing is sent until the first message: `initialize`, whose answer
    /// starts a session, or any request, which the transport sends as the [`Family`] setting has
    /// it.
    async fn connect(self) -> Result<ClientConnection, mcp_transport::Error> {
        Ok(ClientConnection::new(self.http, self.discovery))
    }
}

/// Configures a [`Client`].
///
/// ```
/// use std::time::Duration;
/// use mcp_streamable_client::{Client, ReconnectPolicy};
///
/// let client = Client::builder("http://127.0.0.1:8080/mcp")
///     .header("x-tenant", "blue")
///     .request_timeout(Duration::from_secs(120))
///     .reconnect(ReconnectPolicy::default().max_retries(3))
///     .reinitialize_on_expiry(true)
///     .build()?;
/// # drop(client);
/// # Ok::<(), mcp_streamable_client::Error>(())
/// ```
#[must_use]
pub struct ClientBuilder {
    url: Result<Uri, Error>,
    error: Option<Error>,
    config: Config,
    client_name: String,
    client_version: String,
    capabilities: serde_json::Value,
    #[cfg(feature = "rustls")]
    tls: Option<rustls::ClientConfig>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("config", &self.config)
            .field("client_name", &self.client_name)
            .field("client_version", &self.client_version)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    fn new(url: &str) -> ClientBuilder {
        let url = url
            .parse::<Uri>()
            .map_err(|e| Error::new(Kind::Builder).with(e));
        ClientBuilder {
            url,
            error: None,
            config: Config {
                url: Uri::default(),
                headers: HeaderMap::new(),
                auth: None,
                connect_timeout: DEFAULT_CONNECT_TIMEOUT,
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                close_timeout: DEFAULT_CLOSE_TIMEOUT,
                sse_idle_timeout: Some(DEFAULT_SSE_IDLE_TIMEOUT),
                standalone: true,
                max_event_size: DEFAULT_MAX_EVENT_SIZE,
                reconnect: ReconnectPolicy::default(),
                reinitialize: false,
                legacy_fallback: true,
                http2_prior_knowledge: false,
                family: Family::default(),
                identity: Identity::new(
                    DEFAULT_CLIENT_NAME,
                    DEFAULT_CLIENT_VERSION,
                    &serde_json::json!({}),
                )
                .expect("the default identity is valid"),
                #[cfg(feature = "otel")]
                telemetry: crate::telemetry::Telemetry::global(),
            },
            client_name: DEFAULT_CLIENT_NAME.to_owned(),
            client_version: DEFAULT_CLIENT_VERSION.to_owned(),
            capabilities: serde_json::json!({}),
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }

    /// Adds a header to every request (C9). An `Authorization` set here is replaced by the
    /// [`auth`](ClientBuilder::auth) provider's value when it returns one. The transport's own
    /// headers (`Host`, `Accept`, `Content-Type`, `Mcp-Session-Id`, `MCP-Protocol-Version`,
    /// `Last-Event-ID`, `Mcp-Method`, `Mcp-Name`) cannot be overridden, and `Content-Length` and
    /// `Transfer-Encoding` set here are not sent: the transport frames its bodies. An invalid
    /// name or value fails [`build`](ClientBuilder::build).
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        let name = HeaderName::try_from(name).map_err(Into::into);
        let value = HeaderValue::try_from(value).map_err(Into::into);
        match (name, value) {
            (Ok(name), Ok(value)) => {
                self.config.headers.append(name, value);
            }
            (Err(e), _) | (_, Err(e)) => {
                self.error.get_or_insert(Error::new(Kind::Builder).with(e));
            }
        }
        self
    }

    /// Sets the provider of the `Authorization` header, asked before every request and again
    /// after a 401 (C9).
    pub fn auth(mut self, provider: impl AuthProvider) -> Self {
        self.config.auth = Some(Arc::new(provider));
        self
    }

    /// Sets how long connecting may take ([`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// Sets how long the server may take to answer a request ([`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// Sets how long closing waits for the answer to its DELETE ([`DEFAULT_CLOSE_TIMEOUT`]).
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.config.close_timeout = timeout;
        self
    }

    /// Sets how long an SSE stream of the Streamable HTTP transport may stay silent (no event,
    /// no comment) before it is treated as broken: its connection is dropped and the stream
    /// resumed with `Last-Event-ID`, or its per-request request sent again, as when the
    /// connection breaks (C4, M7). [`DEFAULT_SSE_IDLE_TIMEOUT`] by default; `None` waits
    /// forever. Keep it a few times the server's keep-alive period, so that keep-alive comments
    /// reset it. The 2024-11-05 fallback's stream, which cannot be resumed, is not bounded.
    pub fn sse_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.sse_idle_timeout = timeout;
        self
    }

    /// Whether to open the standalone GET stream, on which the server sends messages unrelated
    /// to any request (C3). On by default; it opens once the `notifications/initialized`
    /// notification has been accepted. A server that answers the GET with 405 offers none, which
    /// is fine.
    pub fn standalone_stream(mut self, enabled: bool) -> Self {
        self.config.standalone = enabled;
        self
    }

    /// Sets the largest SSE event or JSON body buffered ([`DEFAULT_MAX_EVENT_SIZE`]).
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        self.config.max_event_size = bytes;
        self
    }

    /// Sets how lost SSE streams are reconnected ([`ReconnectPolicy::default`]).
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.config.reconnect = policy;
        self
    }

    /// Whether to start a new session by itself when the server answers 404 to the current
    /// one (C6). Off by default, since the new session knows nothing of the old one: when on,
    /// the transport re-sends the `initialize` request (and `notifications/initialized`) it
    /// remembers, adopts the new session id and sends the failed message once more; the
    /// application is not told, and server-side state (subscriptions, in-flight requests) is
    /// gone.
    pub fn reinitialize_on_expiry(mut self, enabled: bool) -> Self {
        self.config.reinitialize = enabled;
        self
    }

    /// Whether to fall back to the 2024-11-05 HTTP+SSE transport when the first POST (the
    /// `initialize`) is answered 400, 404 or 405 (C10). On by default: a Streamable HTTP server
    /// accepts a valid `initialize`, so the fallback costs nothing with current servers and
    /// reaches old ones.
    pub fn legacy_fallback(mut self, enabled: bool) -> Self {
        self.config.legacy_fallback = enabled;
        self
    }

    /// Sets which protocol the transport speaks for the messages it shapes itself (M7):
    /// [`Family::Auto`] (the default) finds out with the first request, [`Family::PerRequest`] speaks only
    /// the 2026-07-28 per-request protocol, [`Family::Session`] only the session-based one.
    pub fn family(mut self, family: Family) -> Self {
        self.config.family = family;
        self
    }

    /// Sets the name and version the client declares: in the `_meta` the transport adds to
    /// per-request messages, and in the `initialize` it sends when it falls back to the
    /// session-based protocol by itself (M7). By default, this crate's name and version.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_name = name.into();
        self.client_version = version.into();
        self
    }

    /// Sets the capabilities the client declares, in the same places as
    /// [`client_info`](ClientBuilder::client_info); by default none (`{}`). Anything but a JSON
    /// object fails [`build`](ClientBuilder::build).
    pub fn client_capabilities(mut self, capabilities: serde_json::Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Speaks HTTP/2 without negotiation, for `http` servers known to support it (off by
    /// default: plain `http` uses HTTP/1.1; `https` negotiates HTTP/2 by ALPN by itself).
    pub fn http2_prior_knowledge(mut self, enabled: bool) -> Self {
        self.config.http2_prior_knowledge = enabled;
        self
    }

    /// Uses this TLS configuration for `https` instead of the default one (the platform's
    /// roots, or the webpki roots where the platform has none). ALPN is set by the transport.
    #[cfg(feature = "rustls")]
    pub fn tls_config(mut self, config: rustls::ClientConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Where the client's spans and metrics go (feature `otel`): by default the global
    /// providers as they were when [`Client::builder`] was called ([`Telemetry::global`]).
    /// Every request gets a span `mcp.client` and a `mcp.client.operation.duration`, and
    /// carries its span's context in `params._meta` (SPEC.md C12).
    ///
    /// [`Telemetry::global`]: crate::telemetry::Telemetry::global
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: crate::telemetry::Telemetry) -> Self {
        self.config.telemetry = telemetry;
        self
    }

    /// Builds the client. Fails on an invalid URL or header, or an `https` URL without the
    /// `rustls` feature.
    pub fn build(self) -> Result<Client, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let url = self.url?;
        let https = match url.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(Error::new(Kind::Builder).with("the URL must be http or https")),
        };
        if url.authority().is_none() {
            return Err(Error::new(Kind::Builder).with("the URL has no host"));
        }
        if https && !cfg!(feature = "rustls") {
            return Err(Error::new(Kind::Builder).with("https needs the `rustls` feature"));
        }
        let identity = Identity::new(&self.client_name, &self.client_version, &self.capabilities)?;
        let config = Config {
            url,
            identity,
            ..self.config
        };
        #[cfg(feature = "rustls")]
        let http = Http::new(config, self.tls)?;
        #[cfg(not(feature = "rustls"))]
        let http = Http::new(config)?;
        Ok(Client {
            http: Arc::new(http),
            discovery: Arc::default(),
        })
    }
}
