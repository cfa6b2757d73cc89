//! Fake servers written for the tests: plain hyper on loopback, a closure per test deciding the
//! answers, and a log of what was received.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

/// The body of a fake answer.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// The session id [`standard`] assigns.
pub(crate) const SESSION: &str = "sess-1";
/// The protocol version [`standard`] negotiates.
pub(crate) const VERSION: &str = "2025-06-18";

/// One request the fake server received.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    pub(crate) version: http::Version,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) at: Instant,
}

impl Req {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of the body, if any.
    pub(crate) fn rpc(&self) -> Option<String> {
        self.json()["method"].as_str().map(str::to_owned)
    }

    /// The JSON-RPC id of the body (`null` if none).
    pub(crate) fn id(&self) -> Value {
        self.json()["id"].clone()
    }

    pub(crate) fn is_post(&self, rpc: &str) -> bool {
        self.method == Method::POST && self.rpc().as_deref() == Some(rpc)
    }
}

/// A running fake server.
pub(crate) struct Fake {
    pub(crate) url: String,
    log: Arc<Mutex<Vec<Req>>>,
    /// Told of every request logged.
    logged: Arc<Notify>,
    /// The TCP connections accepted.
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    /// Serves `handler` on 127.0.0.1, at the path `/mcp`, until dropped: dropping it closes its
    /// listener and its connections, as a server that has gone.
    pub(crate) async fn start<F, Fut>(handler: F) -> Fake
    where
        F: Fn(Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let logged = Arc::new(Notify::new());
        let accepted = Arc::new(AtomicUsize::new(0));
        let handler = Arc::new(handler);
        let task = tokio::spawn({
            let log = log.clone();
            let logged = logged.clone();
            let accepted = accepted.clone();
            async move {
                // Dropped with the server: its connections go with it.
                let mut connections = tokio::task::JoinSet::new();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return;
                    };
                    while connections.try_join_next().is_some() {}
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let handler = handler.clone();
                    let log = log.clone();
                    let logged = logged.clone();
                    let service = service_fn(move |req: http::Request<Incoming>| {
                        let handler = handler.clone();
                        let log = log.clone();
                        let logged = logged.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let req = Req {
                                method: parts.method,
                                uri: parts.uri,
                                version: parts.version,
                                headers: parts.headers,
                                body,
                                at: Instant::now(),
                            };
                            log.lock().unwrap().push(req.clone());
                            logged.notify_waiters();
                            Ok::<_, Infallible>(handler(req).await)
                        }
                    });
                    connections.spawn(async move {
                        let _ = auto::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(tcp), service)
                            .await;
                    });
                }
            }
        });
        Fake {
            url: format!("http://{addr}/mcp"),
            log,
            logged,
            accepted,
            task,
        }
    }

    /// The TCP connections accepted so far.
    pub(crate) fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Every request received so far.
    pub(crate) fn requests(&self) -> Vec<Req> {
        self.log.lock().unwrap().clone()
    }

    pub(crate) fn count(&self, method: Method) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.method == method)
            .count()
    }

    /// Waits until `done` holds for the log, woken by each request logged; fails after
    /// [`LIMIT`](crate::LIMIT) without one.
    pub(crate) async fn wait_for(&self, done: impl Fn(&[Req]) -> bool) -> Vec<Req> {
        loop {
            let logged = self.logged.notified();
            let log = self.requests();
            if done(&log) {
                return log;
            }
            if tokio::time::timeout(crate::LIMIT, logged).await.is_err() {
                panic!("waited in vain; log: {log:#?}");
            }
        }
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// An answer with `status`, `content_type` and `body`.
pub(crate) fn answer(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    if !content_type.is_empty() {
        response
            .headers_mut()
            .insert("content-type", HeaderValue::from_str(content_type).unwrap());
    }
    response
}

/// 200 with a JSON body.
pub(crate) fn json_reply(value: Value) -> Response<Body> {
    answer(200, "application/json", value.to_string())
}

/// An error status with a text body.
pub(crate) fn status(code: u16, body: &str) -> Response<Body> {
    answer(code, "text/plain", body.to_owned())
}

/// 202 Accepted, empty.
pub(crate) fn accepted() -> Response<Body> {
    answer(202, "", Bytes::new())
}

/// 200 with a complete event stream: the connection ends after `text`.
pub(crate) fn sse(text: impl Into<String>) -> Response<Body> {
    answer(200, "text/event-stream", text.into())
}

/// 200 with an event stream fed through the returned sender; it ends when the sender drops.
pub(crate) fn sse_channel(capacity: usize) -> (mpsc::Sender<Bytes>, Response<Body>) {
    let (tx, rx) = mpsc::channel::<Bytes>(capacity);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    let mut response = Response::new(StreamBody::new(stream).boxed());
    response.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    (tx, response)
}

/// Adds `Mcp-Session-Id`.
pub(crate) fn with_session(mut response: Response<Body>, id: &str) -> Response<Body> {
    response
        .headers_mut()
        .insert("mcp-session-id", HeaderValue::from_str(id).unwrap());
    response
}

/// A JSON-RPC success response, as text.
pub(crate) fn result(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An `initialize` result negotiating [`VERSION`].
pub(crate) fn init_result(id: &Value) -> String {
    result(
        id,
        json!({"protocolVersion": VERSION, "capabilities": {}, "serverInfo": {"name": "fake", "version": "0"}}),
    )
}

/// The well-behaved default: `initialize` starts session [`SESSION`] with a JSON answer,
/// notifications get 202, other requests a JSON echo of their method and params, GET 405,
/// DELETE 204.
pub(crate) fn standard(req: &Req) -> Response<Body> {
    match req.method {
        Method::POST => match (req.rpc(), req.id()) {
            (Some(m), id) if m == "initialize" => {
                with_session(answer(200, "application/json", init_result(&id)), SESSION)
            }
            (Some(_), Value::Null) => accepted(),
            (Some(m), id) => json_reply(
                serde_json::from_str(&result(
                    &id,
                    json!({"method": m, "params": req.json()["params"]}),
                ))
                .unwrap(),
            ),
            (None, _) => accepted(),
        },
        Method::DELETE => answer(204, "", Bytes::new()),
        _ => status(405, "method not allowed"),
    }
}
