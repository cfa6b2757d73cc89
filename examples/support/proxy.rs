//! A load balancer without session affinity, for the tests of several nodes and the load
//! benchmark's rows of several nodes (`mcp-proxy`): each HTTP request goes to the next node in
//! turn, whatever session it names, and its response (an SSE stream included) is passed back as
//! it comes. With [`Routing::Away`], each request of a session goes to a node other than the one
//! that answered its `initialize` (its holder), for a load suite row where every request hops.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

type Body = UnsyncBoxBody<Bytes, hyper::Error>;

/// How a proxy picks a node for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routing {
    /// The next node in turn.
    RoundRobin,
    /// The next node in turn but the one that answered the session's `initialize`.
    Away,
}

/// A round-robin proxy in front of `nodes`.
#[derive(Debug)]
pub struct RoundRobin {
    nodes: std::sync::Mutex<Vec<SocketAddr>>,
    next: AtomicUsize,
    routing: Routing,
    /// With [`Routing::Away`], the node that answered each session's `initialize`.
    started: std::sync::Mutex<std::collections::HashMap<String, SocketAddr>>,
    /// Requests passed on, per node.
    passed: std::sync::Mutex<std::collections::HashMap<SocketAddr, usize>>,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl RoundRobin {
    /// Listens on a loopback port the OS picks; returns the proxy and its address. It serves
    /// until the runtime ends.
    pub async fn start(nodes: Vec<SocketAddr>) -> (Arc<RoundRobin>, SocketAddr) {
        Self::start_routing(nodes, Routing::RoundRobin).await
    }

    /// [`start`](Self::start), picking nodes as `routing` says.
    pub async fn start_routing(
        nodes: Vec<SocketAddr>,
        routing: Routing,
    ) -> (Arc<RoundRobin>, SocketAddr) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let proxy = Arc::new(RoundRobin {
            passed: Default::default(),
            nodes: std::sync::Mutex::new(nodes),
            next: AtomicUsize::new(0),
            routing,
            started: Default::default(),
            client: Client::builder(TokioExecutor::new()).build(connector),
        });
        let serving = Arc::clone(&proxy);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let _ = stream.set_nodelay(true);
                let proxy = Arc::clone(&serving);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let proxy = Arc::clone(&proxy);
                        async move { Ok::<_, Infallible>(proxy.pass(request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (proxy, addr)
    }

    /// The requests passed on to `node`.
    pub fn passed(&self, node: SocketAddr) -> usize {
        self.passed.lock().unwrap().get(&node).copied().unwrap_or(0)
    }

    /// Moves the turn on by one node: the next request goes to the node after the one it would
    /// have gone to.
    pub fn skip(&self) {
        self.next.fetch_add(1, Ordering::Relaxed);
    }

    /// Sends to `new` what went to `old`: a node started again on another port, as a load
    /// balancer's service discovery would see it.
    pub fn replace(&self, old: SocketAddr, new: SocketAddr) {
        for node in self.nodes.lock().unwrap().iter_mut() {
            if *node == old {
                *node = new;
            }
        }
    }

    /// Stops sending requests to `addr` (as a load balancer's health check would).
    pub fn remove(&self, addr: SocketAddr) {
        self.nodes.lock().unwrap().retain(|a| *a != addr);
    }

    /// Passes `request` on to the next node; a node it cannot connect to is skipped for the
    /// next, as nginx's `proxy_next_upstream error` does (the request never reached it), once
    /// the body is read (a few KiB, for the tests).
    async fn pass(&self, request: Request<Incoming>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let body = match body.collect().await {
            Ok(body) => body.to_bytes(),
            Err(err) => return bad_gateway(format!("proxy: request body: {err}")),
        };
        let tries = self.nodes.lock().unwrap().len();
        let session = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let avoid = match (&session, self.routing) {
            (Some(session), Routing::Away) => self.started.lock().unwrap().get(session).copied(),
            _ => None,
        };
        let mut last = String::new();
        for _ in 0..tries {
            let node = {
                let nodes = self.nodes.lock().unwrap();
                let mut node = nodes[self.next.fetch_add(1, Ordering::Relaxed) % nodes.len()];
                if Some(node) == avoid && nodes.len() > 1 {
                    node = nodes[self.next.fetch_add(1, Ordering::Relaxed) % nodes.len()];
                }
                node
            };
            *self.passed.lock().unwrap().entry(node).or_default() += 1;
            let mut parts = parts.clone();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            parts.uri = format!("http://{node}{path}").parse().unwrap();
            let request = Request::from_parts(parts, Full::new(body.clone()));
            match self.client.request(request).await {
                Ok(response) => {
                    if self.routing == Routing::Away
                        && session.is_none()
                        && let Some(started) = response.headers().get("mcp-session-id")
                        && let Ok(started) = started.to_str()
                    {
                        self.started
                            .lock()
                            .unwrap()
                            .insert(started.to_owned(), node);
                    }
                    return response.map(BodyExt::boxed_unsync);
                }
                Err(err) if err.is_connect() => last = format!("proxy: node {node}: {err}"),
                Err(err) => return bad_gateway(format!("proxy: node {node}: {err}")),
            }
        }
        bad_gateway(last)
    }
}

fn bad_gateway(message: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(message))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}
