//! One request, its whole answer: the [`HttpClient`] seam, and [`Client`], the implementation
//! on this crate's connections and hyper-util's pooled client.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::client::legacy::Client as Pooled;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::connect::Connector;
use crate::error::Error;

/// How long one exchange may take, connecting included, unless the builder says otherwise: the
/// documents fetched this way (metadata, key sets, tokens) come in well under a second, and a
/// server silent for this long is down, not slow.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest body read, unless the builder says otherwise: metadata documents, key sets and
/// token answers weigh a few KiB; a misbehaving server cannot make a client buffer more.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// What [`HttpClient::send`] returns.
pub type ResponseFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Response<Bytes>, Error>> + Send + 'a>>;

/// Sends one request and reads its whole answer: the HTTP client of the crates that make a few
/// requests of their own (an authorization server's metadata and token endpoint, a key set), as
/// a parameter, so that an application can hand them the client it already has (a proxy, a
/// recorder in tests). [`Client`] is the implementation on this crate's stack.
///
/// ```
/// use bytes::Bytes;
/// use http::{Request, Response};
/// use mcp_http_client::{HttpClient, ResponseFuture};
///
/// /// Answers every request with the same document.
/// #[derive(Debug)]
/// struct Canned(&'static str);
///
/// impl HttpClient for Canned {
///     fn send(&self, _request: Request<Bytes>) -> ResponseFuture<'_> {
///         let body = Bytes::from_static(self.0.as_bytes());
///         Box::pin(async move { Ok(Response::new(body)) })
///     }
/// }
/// ```
pub trait HttpClient: std::fmt::Debug + Send + Sync {
    /// Sends `request` and returns the answer with its whole body, whatever its status.
    /// Redirects are answers like any other, not followed.
    ///
    /// An implementation bounds the time the exchange takes and the size of the body it reads,
    /// and fails past them with [`Error::timeout`] and [`Error::body_too_large`]; any other
    /// failure is an [`Error::request`].
    fn send(&self, request: Request<Bytes>) -> ResponseFuture<'_>;
}

impl<T: HttpClient + ?Sized> HttpClient for Arc<T> {
    fn send(&self, request: Request<Bytes>) -> ResponseFuture<'_> {
        (**self).send(request)
    }
}

/// The [`HttpClient`] on this crate's [`Connector`] and hyper-util's pooled client: HTTP/1.1,
/// or HTTP/2 where the server offers it by ALPN; each exchange bounded in time and body size.
///
/// ```no_run
/// # async fn f() -> Result<(), mcp_http_client::Error> {
/// use bytes::Bytes;
/// use mcp_http_client::{Client, HttpClient};
///
/// let client = Client::builder().max_body_bytes(64 * 1024).build()?;
/// let request = http::Request::get("https://auth.example.com/.well-known/jwks.json")
///     .body(Bytes::new())
///     .expect("a valid request");
/// let answer = client.send(request).await?;
/// println!("{} {:?}", answer.status(), answer.body());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    pooled: Pooled<Connector, Full<Bytes>>,
    timeout: Duration,
    max_body_bytes: usize,
}

/// Settings of a [`Client`], from [`Client::builder`].
#[derive(Debug)]
#[must_use]
pub struct ClientBuilder {
    timeout: Duration,
    max_body_bytes: usize,
    keep_alive: bool,
    https: bool,
    #[cfg(feature = "rustls")]
    tls: Option<rustls::ClientConfig>,
}

impl Client {
    /// A builder with the defaults: [`DEFAULT_TIMEOUT`], [`DEFAULT_MAX_BODY_BYTES`], idle
    /// connections kept for the next request, `https` with [`tls::default_config`].
    ///
    /// [`tls::default_config`]: crate::tls::default_config
    pub fn builder() -> ClientBuilder {
        ClientBuilder {
            timeout: DEFAULT_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            keep_alive: true,
            https: true,
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }

    async fn exchange(&self, request: Request<Bytes>) -> Result<Response<Bytes>, Error> {
        let response = self
            .pooled
            .request(request.map(Full::new))
            .await
            .map_err(Error::request)?;
        let (parts, body) = response.into_parts();
        let limit = self.max_body_bytes;
        let body = Limited::new(body, limit).collect().await.map_err(|e| {
            if e.is::<LengthLimitError>() {
                Error::body_too_large(limit)
            } else {
                Error::request(e)
            }
        })?;
        Ok(Response::from_parts(parts, body.to_bytes()))
    }
}

impl HttpClient for Client {
    fn send(&self, request: Request<Bytes>) -> ResponseFuture<'_> {
        if request.uri().scheme().is_none() || request.uri().authority().is_none() {
            return Box::pin(async { Err(Error::url()) });
        }
        Box::pin(async move {
            tokio::time::timeout(self.timeout, self.exchange(request))
                .await
                .unwrap_or_else(|_| Err(Error::timeout()))
        })
    }
}

impl ClientBuilder {
    /// How long one exchange may take, connecting and reading the body included
    /// ([`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.timeout = timeout;
        self
    }

    /// The largest body read ([`DEFAULT_MAX_BODY_BYTES`]).
    pub fn max_body_bytes(mut self, max: usize) -> ClientBuilder {
        self.max_body_bytes = max;
        self
    }

    /// Whether a connection is kept for the next request once its answer was read (on by
    /// default). Off for a client that sends a request every few minutes, whose connections
    /// would only sit idle.
    pub fn keep_alive(mut self, enabled: bool) -> ClientBuilder {
        self.keep_alive = enabled;
        self
    }

    /// Whether the client speaks `https` (on by default). Off, it reads no roots and fails
    /// `https` requests: for a client whose URLs are known to be plain `http` (a loopback
    /// server's).
    pub fn https(mut self, enabled: bool) -> ClientBuilder {
        self.https = enabled;
        self
    }

    /// Trusts this TLS configuration for `https` instead of [`tls::default_config`] (a private
    /// CA's roots, say); its ALPN is set by the client. Implies [`https`](ClientBuilder::https).
    ///
    /// [`tls::default_config`]: crate::tls::default_config
    #[cfg(feature = "rustls")]
    pub fn tls_config(mut self, config: rustls::ClientConfig) -> ClientBuilder {
        self.tls = Some(config);
        self.https = true;
        self
    }

    /// The client. Fails only when `https` is on and its TLS configuration cannot be made.
    pub fn build(self) -> Result<Client, Error> {
        let connector = Connector::new(self.timeout);
        #[cfg(feature = "rustls")]
        let connector = match self.https {
            true => connector.https(self.tls)?,
            false => connector,
        };
        let mut builder = Pooled::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new());
        if !self.keep_alive {
            builder.pool_max_idle_per_host(0);
        }
        Ok(Client {
            pooled: builder.build(connector),
            timeout: self.timeout,
            max_body_bytes: self.max_body_bytes,
        })
    }
}
