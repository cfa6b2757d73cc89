//! [`Client`] and its [`ClientBuilder`]: the configuration of the transport.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_transport::Transport;

use crate::connection::ClientConnection;
use crate::error::{Error, Kind};
use crate::request::Http;
use crate::{AuthProvider, ReconnectPolicy};

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

/// The configuration every connection of a [`Client`] shares.
pub(crate) struct Config {
    pub(crate) url: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) auth: Option<Arc<dyn AuthProvider>>,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) close_timeout: Duration,
    pub(crate) standalone: bool,
    pub(crate) max_event_size: usize,
    pub(crate) reconnect: ReconnectPolicy,
    pub(crate) reinitialize: bool,
    pub(crate) legacy_fallback: bool,
    pub(crate) http2_prior_knowledge: bool,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may hold credentials: list only their names.
        f.debug_struct("Config")
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("auth", &self.auth.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("standalone", &self.standalone)
            .field("max_event_size", &self.max_event_size)
            .field("reconnect", &self.reconnect)
            .field("reinitialize", &self.reinitialize)
            .field("legacy_fallback", &self.legacy_fallback)
            .field("http2_prior_knowledge", &self.http2_prior_knowledge)
            .finish()
    }
}

/// A Streamable HTTP client for one MCP endpoint: [`connect`](Transport::connect) it to get a
/// [`ClientConnection`].
///
/// Cheap to clone; clones share one HTTP connection pool. Build one with [`Client::builder`].
#[derive(Clone, Debug)]
pub struct Client {
    http: Arc<Http>,
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
}

impl Transport for Client {
    type Connection = ClientConnection;

    /// Opens a connection. Nothing is sent until the first message, which should be
    /// `initialize`: the session starts with its answer.
    async fn connect(self) -> Result<ClientConnection, mcp_transport::Error> {
        Ok(ClientConnection::new(self.http))
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
    #[cfg(feature = "rustls")]
    tls: Option<rustls::ClientConfig>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("config", &self.config)
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
                standalone: true,
                max_event_size: DEFAULT_MAX_EVENT_SIZE,
                reconnect: ReconnectPolicy::default(),
                reinitialize: false,
                legacy_fallback: true,
                http2_prior_knowledge: false,
            },
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }

    /// Adds a header to every request (C9). An `Authorization` set here is replaced by the
    /// [`auth`](ClientBuilder::auth) provider's value when it returns one. The transport's own
    /// headers (`Accept`, `Content-Type`, `Mcp-Session-Id`, `MCP-Protocol-Version`,
    /// `Last-Event-ID`) cannot be overridden. An invalid name or value fails
    /// [`build`](ClientBuilder::build).
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
        let config = Config { url, ..self.config };
        #[cfg(feature = "rustls")]
        let http = Http::new(config, self.tls)?;
        #[cfg(not(feature = "rustls"))]
        let http = Http::new(config)?;
        Ok(Client {
            http: Arc::new(http),
        })
    }
}
