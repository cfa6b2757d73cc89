//! The service: a hyper and tower `Service` that serves one MCP endpoint.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Buf;
use http::{Method, Request, Response};

use crate::body::ResponseBody;
use crate::config::{Config, Mode};
use crate::connection::ServerConnection;
use crate::error::{Kind, Reject};
use crate::registry::Registry;
use crate::{get, origin, post};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Factory = dyn Fn(ServerConnection, http::request::Parts) -> Pin<Box<dyn Future<Output = ()> + Send>>
    + Send
    + Sync;

/// What every request of a service shares.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) registry: Registry,
    epoch: Instant,
    factory: Box<Factory>,
    pub(crate) shutting_down: AtomicBool,
}

impl Shared {
    /// Milliseconds since the service started, on tokio's clock (so paused-time tests see
    /// timeouts pass).
    pub(crate) fn now_ms(&self) -> u64 {
        let now = tokio::time::Instant::now().into_std();
        u64::try_from(now.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    /// Starts the application for a new session.
    pub(crate) fn start(
        &self,
        connection: ServerConnection,
        parts: http::request::Parts,
        span: tracing::Span,
    ) {
        tokio::spawn(tracing::Instrument::instrument(
            (self.factory)(connection, parts),
            span,
        ));
    }

    pub(crate) fn allow(&self) -> &'static str {
        match self.config.mode {
            Mode::Stateless => "POST",
            Mode::Stateful => "GET, POST, DELETE",
        }
    }
}

/// The Streamable HTTP transport as a service: serves one MCP endpoint, all of its sessions.
///
/// Build it from a [`Config`] and a factory that the service calls for each new session with
/// the session's [`ServerConnection`] and the parts of the HTTP request that started it (the
/// `initialize` request, so that what authentication middleware put in its extensions reaches
/// the application); the future the factory returns is spawned and runs the session.
///
/// It is both a hyper `Service` and a `tower::Service`: serve it with hyper directly, or
/// mount it in an axum `Router`. It serves whatever path it is mounted at.
///
/// ```no_run
/// use hyper_util::rt::{TokioExecutor, TokioIo};
/// use hyper_util::server::conn::auto;
/// use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService};
/// use mcp_transport::Connection;
///
/// # async fn run() -> std::io::Result<()> {
/// let service = StreamableHttpService::new(Config::default(), |mut conn: ServerConnection, _parts| async move {
///     while let Ok(Some(message)) = conn.recv().await {
///         // answer the message
/// #       let _ = message;
///     }
/// });
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// loop {
///     let (tcp, _) = listener.accept().await?;
///     tcp.set_nodelay(true)?;
///     let service = service.clone();
///     tokio::spawn(async move {
///         let _ = auto::Builder::new(TokioExecutor::new())
///             .serve_connection(TokioIo::new(tcp), service)
///             .await;
///     });
/// }
/// # }
/// ```
///
/// In axum, mount it with `Router::new().route_service("/mcp", service)`.
#[derive(Clone)]
pub struct StreamableHttpService {
    shared: Arc<Shared>,
}

impl fmt::Debug for StreamableHttpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttpService")
            .field("config", &self.shared.config)
            .field("sessions", &self.shared.registry.len())
            .finish()
    }
}

impl StreamableHttpService {
    /// A service with `config`, running each session with `factory`.
    pub fn new<F, Fut>(config: Config, factory: F) -> Self
    where
        F: Fn(ServerConnection, http::request::Parts) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        StreamableHttpService {
            shared: Arc::new(Shared {
                config,
                registry: Registry::default(),
                epoch: tokio::time::Instant::now().into_std(),
                factory: Box::new(move |conn, parts| Box::pin(factory(conn, parts))),
                shutting_down: AtomicBool::new(false),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The number of live sessions.
    pub fn session_count(&self) -> usize {
        self.shared.registry.len()
    }

    /// Serves one request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<ResponseBody>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Buf + Send,
        B::Error: Into<BoxError>,
    {
        let shared = &self.shared;
        let result = async {
            let config = &shared.config;
            origin::check(
                &config.allowed_hosts,
                &config.allowed_origins,
                request.headers(),
                request.uri().authority().map(|a| a.as_str()),
            )?;
            let stateful = config.mode == Mode::Stateful;
            match *request.method() {
                Method::POST => post::handle(shared, request).await,
                Method::GET if stateful => get::handle_get(shared, request).await,
                Method::DELETE if stateful => get::handle_delete(shared, request).await,
                ref other => Err(Reject::new(
                    Kind::MethodNotAllowed,
                    format!(
                        "method {other} is not allowed; this endpoint serves {}",
                        shared.allow()
                    ),
                )),
            }
        }
        .await;
        result.unwrap_or_else(|reject| {
            tracing::debug!(status = %reject.status(), message = %reject.message, "request refused");
            reject.into_response(shared.allow())
        })
    }

    /// Stops gracefully (S23): new sessions are refused with 503, standalone streams end, and
    /// requests in flight get up to `grace` to finish before every session is closed.
    pub async fn shutdown(&self, grace: Duration) {
        let shared = &self.shared;
        shared.shutting_down.store(true, Ordering::Release);
        for session in shared.registry.all() {
            session.end_standalone();
        }
        let deadline = tokio::time::Instant::now() + grace;
        // Bounded: at most `grace`, checking every 10 ms.
        while tokio::time::Instant::now() < deadline
            && shared.registry.all().iter().any(|s| s.has_inflight())
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for session in shared.registry.all() {
            session.close().await;
        }
    }
}

type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

impl<B> tower_service::Service<Request<B>> for StreamableHttpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> ResponseFuture {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(request).await) })
    }
}

impl hyper::service::Service<Request<hyper::body::Incoming>> for StreamableHttpService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, request: Request<hyper::body::Incoming>) -> ResponseFuture {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(request).await) })
    }
}
