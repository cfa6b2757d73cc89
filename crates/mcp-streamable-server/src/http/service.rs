//! The service: a hyper and tower `Service` that serves one MCP endpoint.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::Buf;
use http::{Method, Request, Response};

use crate::cluster::sign::{MCP_FORWARD, MCP_FORWARD_AFTER};
use crate::core::Shared;
use crate::core::config::{Config, Families, Mode};
use crate::core::health::Readiness;
use crate::core::session::Ending;
use crate::core::session::connection::ServerConnection;
use crate::http::app::Server;
use crate::http::error::{Kind, Reject};
use crate::http::reply::ResponseBody;
use crate::http::request_log::Logged;
use crate::http::{delete, get, origin, peer, post};
use crate::protocol::transport::TransportHeaders;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The Streamable HTTP transport as a service: serves one MCP endpoint, all of its sessions.
///
/// Build it from a [`Config`] and a factory that the service calls for each new session with
/// the session's [`ServerConnection`] and the parts of the HTTP request that started it (the
/// `initialize` request, or the stateless or per-request POST the connection serves), so that
/// what authentication put in its extensions, the guard's `Principal` among it (feature
/// `auth`, see the crate docs), reaches the application; the future the factory returns is spawned and runs the session. The parts
/// live as long as the application keeps them: a session's are copied out of the connection's
/// read buffer, a few hundred bytes; a stateless or per-request connection's, which ends with
/// its POST, are the request's own, which keep that buffer (about 16 KiB) while the application
/// holds them. An application that has no use for them drops them.
///
/// It is both a hyper `Service` and a `tower::Service`: serve it with [`serve`](mod@crate::serve)
/// (feature `serve`, on by default: timeouts, a connection cap and graceful shutdown set for
/// production), with a hyper loop of your own (give its builder a timer, or hyper's header read
/// timeout does nothing), or mount it in an axum `Router`. It serves whatever path it is
/// mounted at.
///
/// ```no_run
/// use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService};
/// use mcp_transport::Connection;
///
/// # #[cfg(feature = "serve")]
/// # async fn run() -> std::io::Result<()> {
/// let service = StreamableHttpService::new(Config::default(), |mut conn: ServerConnection, _parts| async move {
///     while let Ok(Some(message)) = conn.recv().await {
///         // answer the message
/// #       let _ = message;
///     }
/// });
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// mcp_streamable_server::serve::serve(listener, service, mcp_streamable_server::serve::terminated()).await;
/// # Ok(())
/// # }
/// ```
///
/// In axum, mount it with `Router::new().route_service("/mcp", service)`.
#[derive(Clone)]
pub struct StreamableHttpService {
    server: Arc<Server>,
}

impl fmt::Debug for StreamableHttpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttpService")
            .field("config", &self.server.shared.config)
            .field("sessions", &self.server.shared.sessions.len())
            .finish()
    }
}

impl StreamableHttpService {
    /// A service with `config`, running each session with `factory`.
    ///
    /// With a [`Cluster`](crate::Cluster), the service serves the other nodes on the cluster's
    /// listener and follows this node's lease; both start with the service when it is built
    /// within a tokio runtime, else with its first request.
    pub fn new<F, Fut>(config: Config, factory: F) -> Self
    where
        F: Fn(ServerConnection, http::request::Parts) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let factory = Box::new(move |conn, parts| {
            Box::pin(factory(conn, parts)) as Pin<Box<dyn Future<Output = ()> + Send>>
        });
        let config = config.with_cluster_stores();
        let service = StreamableHttpService {
            server: Arc::new(Server::new(Shared::new(config), factory)),
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            start_nodes(&service.server);
        }
        service
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.server.shared.config
    }

    /// The number of live sessions.
    pub fn session_count(&self) -> usize {
        self.server.shared.sessions.len()
    }

    /// The bytes of outgoing messages waiting in the sessions' outboxes for slow or absent
    /// readers, summed over every session: what [`Config::max_buffered_bytes`] bounds per
    /// session and [`Config::max_total_buffered_bytes`] in all (S22). Event stores keep their
    /// own count. Useful for monitoring.
    pub fn buffered_bytes(&self) -> usize {
        self.server.shared.budget.total()
    }

    /// Whether this service is ready for new traffic, and if not why (H2): it is not once
    /// [`shutdown`](Self::shutdown) began, and with a [`Cluster`](crate::Cluster) while this
    /// node does not hold its [`Lease`](crate::Lease) (the cluster renews the lease through
    /// its shared stores, so a lease held proves that they answer). A readiness probe's answer:
    /// `serve::Options::health_paths` (feature `serve`) serves it at a path of its own, and
    /// with another server, route a path to it:
    ///
    /// ```
    /// use mcp_streamable_server::{Config, Readiness, ServerConnection, StreamableHttpService};
    ///
    /// let service = StreamableHttpService::new(Config::default(), |_c: ServerConnection, _p| async {});
    /// let probe = || {
    ///     let readiness = service.readiness();
    ///     let status = if readiness.is_ready() { 200 } else { 503 };
    ///     (status, readiness.reason())
    /// };
    /// assert_eq!(probe(), (200, "ready"));
    /// ```
    pub fn readiness(&self) -> Readiness {
        self.server.shared.readiness()
    }

    /// Serves one request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<ResponseBody>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Buf + Send,
        B::Error: Into<BoxError>,
    {
        let server = &self.server;
        let shared = &server.shared;
        let config = &shared.config;
        start_nodes(server);
        // N9: only the nodes' own listener takes forwards; a client's claim to be one is
        // dropped before anything reads it.
        let mut request = request;
        request.headers_mut().remove(MCP_FORWARD);
        request.headers_mut().remove(MCP_FORWARD_AFTER);
        let logged = Logged::begin(&request);
        // A1-A3: before anything else is looked at, let alone registered. Unconfigured, this
        // is one `Option` test.
        #[cfg(feature = "auth")]
        let request = match &config.authorization {
            Some(guard) => match crate::http::auth::admit(guard, request).await {
                Ok(admitted) => admitted,
                Err(answer) => {
                    if let Some(logged) = logged {
                        logged.end(&answer, Some("not authorized"));
                    }
                    return answer;
                }
            },
            None => request,
        };
        let transport = TransportHeaders::read(request.headers());
        // M2: GET and DELETE belong to sessions, which the per-request family has none of.
        let sessions = config.mode == Mode::Stateful
            && config.families != Families::PerRequestOnly
            && !(config.families == Families::Both && transport.names_per_request_version());
        let allow = if sessions {
            "GET, POST, DELETE"
        } else {
            "POST"
        };
        let result = async {
            origin::check(
                &config.allowed_hosts,
                &config.allowed_origins,
                request.headers(),
                request.uri().authority().map(|a| a.as_str()),
            )?;
            match *request.method() {
                Method::POST => post::handle(server, request, &transport).await,
                Method::GET if sessions => get::handle(server, request, &transport).await,
                Method::DELETE if sessions => delete::handle(server, request, &transport).await,
                ref other => Err(Reject::new(
                    Kind::MethodNotAllowed,
                    format!("method {other} is not allowed; this endpoint serves {allow}"),
                )),
            }
        }
        .await;
        match result {
            Ok(response) => {
                if let Some(logged) = logged {
                    logged.end(&response, None);
                }
                response
            }
            Err(reject) => {
                tracing::debug!(status = %reject.status(), message = %reject.message, "request refused");
                #[cfg(feature = "otel")]
                shared
                    .telemetry
                    .refused(reject.status().as_u16(), reject.kind.name());
                let logged = logged.map(|logged| (logged, reject.message.clone()));
                let response = reject.into_response(allow);
                if let Some((logged, why)) = logged {
                    logged.end(&response, Some(&why));
                }
                response
            }
        }
    }

    /// Where the service records its telemetry (`serve`'s connections).
    #[cfg(all(feature = "otel", feature = "serve"))]
    pub(crate) fn telemetry(&self) -> &crate::core::telemetry::Telemetry {
        &self.server.shared.telemetry
    }

    /// Marks the service as shutting down: unready, refusing new sessions and streams.
    #[cfg(feature = "serve")]
    pub(crate) fn begin_shutdown(&self) {
        self.server.shared.begin_shutdown();
    }

    /// Stops gracefully (S23): new sessions and new standalone streams are refused with 503,
    /// standalone streams end, and requests in flight get up to `grace` to finish before every
    /// session is closed; what was sent by then is still written to the readers that are
    /// connected. Returns as soon as nothing is in flight. From its start, [`readiness`](Self::readiness)
    /// says [`Readiness::ShuttingDown`].
    pub async fn shutdown(&self, grace: Duration) {
        let server = &*self.server;
        let shared = &server.shared;
        shared.begin_shutdown();
        for session in shared.sessions.all() {
            session.end_standalone();
        }
        let deadline = tokio::time::Instant::now() + grace;
        // Bounded: at most `grace`, checking every 10 ms.
        while tokio::time::Instant::now() < deadline
            && shared
                .sessions
                .all_with_transient()
                .iter()
                .any(|s| s.has_inflight())
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // What was sent in time still reaches the readers that are there to take it. With a
        // cluster, a session is handed over rather than ended: another node takes it over at
        // its next request.
        for session in shared.sessions.all_with_transient() {
            #[cfg(feature = "otel")]
            session.ends_by(crate::core::telemetry::EndCause::Shutdown);
            if shared.config.cluster.is_some() && !session.is_transient() {
                session.hand_over().await;
            } else {
                session.close(Ending::Flush).await;
            }
        }
    }
}

/// With a cluster, starts serving the peers and following this node's lease, once.
fn start_nodes(server: &Arc<Server>) {
    let Some(nodes) = &server.nodes else {
        return;
    };
    nodes.started.call_once(|| {
        peer::listen(server);
        tokio::spawn(crate::cluster::reclaim::watch_lease(
            Arc::downgrade(&server.shared),
            Arc::clone(&nodes.cluster),
        ));
    });
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

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use mcp_jsonrpc::{Message, Response, to_raw_value};
    use mcp_transport::{Connection, Sender};

    use super::*;

    /// Answers every request at once with its method's name.
    async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
        let sender = conn.sender();
        while let Ok(Some(message)) = conn.recv().await {
            if let Message::Request(r) = message {
                let result = if r.method == "initialize" {
                    serde_json::json!({"protocolVersion": "2025-06-18"})
                } else {
                    serde_json::json!({"method": r.method})
                };
                let response = Response::success(r.id, to_raw_value(&result).unwrap());
                let _ = sender.send(response.into()).await;
            }
        }
    }

    fn post(session: Option<&str>, body: String) -> Request<Full<Bytes>> {
        let mut b = Request::post("http://localhost/mcp")
            .header("host", "localhost")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(id) = session {
            b = b.header("mcp-session-id", id);
        }
        b.body(Full::new(Bytes::from(body))).unwrap()
    }

    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    /// The seed kept every stream and in-flight entry forever, and took the session's lock three
    /// times to accept a request. Now: one lock to accept the POST, one to route the response,
    /// one for the body to write it and end (and one per time a reader finds nothing yet); and
    /// nothing is left once the request is over.
    #[tokio::test]
    async fn a_request_takes_three_critical_sections_and_leaves_nothing_behind() {
        for json_mode in [false, true] {
            let config = Config::default().json_response(json_mode);
            let service = StreamableHttpService::new(config, app);
            let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
            let response = service.handle(post(None, init.into())).await;
            let sid = response.headers()[crate::protocol::MCP_SESSION_ID]
                .to_str()
                .unwrap()
                .to_owned();
            response.into_body().collect().await.unwrap();
            let session = service.server.shared.sessions.get(&sid).unwrap();
            for i in 1..=3 {
                let before = session.locks.load(Ordering::Relaxed);
                let ping = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#);
                let response = service.handle(post(Some(&sid), ping)).await;
                // In both modes `handle` waits for the answer (in SSE mode, for the head to
                // leave with it), which takes one look at the stream before the answer comes.
                settle().await;
                let body = response.into_body().collect().await.unwrap().to_bytes();
                let json = format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{"method":"ping"}}}}"#);
                let want = if json_mode {
                    json
                } else {
                    format!("data: {json}\n\n")
                };
                assert_eq!(body, want.as_bytes());
                assert_eq!(session.locks.load(Ordering::Relaxed) - before, 3 + 1);
                let st = session.lock();
                assert!(st.streams.is_empty(), "{} streams left", st.streams.len());
                assert!(st.inflight.is_empty());
                assert_eq!((st.attached(), st.buffered.get()), (0, 0));
            }
        }
    }

    /// Stateless sessions are kept for shutdown while their POST is in flight, and no longer.
    #[tokio::test]
    async fn stateless_sessions_are_let_go_when_their_post_ends() {
        for json_mode in [false, true] {
            let config = Config::default().stateless().json_response(json_mode);
            let service = StreamableHttpService::new(config, app);
            let bodies = [
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#,
            ];
            for body in bodies {
                let response = service.handle(post(None, body.into())).await;
                response.into_body().collect().await.unwrap();
                settle().await;
                assert_eq!(service.server.shared.sessions.all_with_transient().len(), 0);
            }
            // An SSE answer holds its session until the body ends.
            let response = service.handle(post(None, bodies[0].into())).await;
            let held = usize::from(!json_mode);
            assert_eq!(
                service.server.shared.sessions.all_with_transient().len(),
                held
            );
            drop(response);
            assert_eq!(service.server.shared.sessions.all_with_transient().len(), 0);
        }
    }
}
