//! A fake HTTP server on a free loopback port: answers with a closure, records every request.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// A request the fake server saw.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    /// Path and query.
    pub(crate) target: String,
    pub(crate) authorization: Option<String>,
    /// The `DPoP` proof, if any.
    pub(crate) dpop: Option<String>,
    pub(crate) body: String,
}

impl Seen {
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// A form field of the body (or query parameter of a GET).
    pub(crate) fn param(&self, name: &str) -> Option<String> {
        let query = match self.method.as_str() {
            "GET" => self.target.split_once('?').map_or("", |(_, q)| q),
            _ => self.body.as_str(),
        };
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }
}

/// What the handler answers: status, headers, body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
}

pub(crate) fn json(body: serde_json::Value) -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type", "application/json".into())],
        body: body.to_string(),
    }
}

pub(crate) fn status(status: u16) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        body: String::new(),
    }
}

type Handler = Arc<dyn Fn(&Seen, &str) -> Reply + Send + Sync>;

/// The server: its base URL (`http://127.0.0.1:PORT`) and its log. It stops when dropped.
pub(crate) struct Fake {
    pub(crate) url: String,
    log: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Fake {
    /// Starts a server; the handler gets each request and the server's base URL.
    pub(crate) async fn start(
        handler: impl Fn(&Seen, &str) -> Reply + Send + Sync + 'static,
    ) -> Fake {
        Fake::serve(handler, None).await
    }

    /// Starts a server speaking TLS with `tls`, at `https://localhost:PORT`.
    #[cfg(feature = "rustls")]
    pub(crate) async fn start_tls(
        handler: impl Fn(&Seen, &str) -> Reply + Send + Sync + 'static,
        tls: Arc<rustls::ServerConfig>,
    ) -> Fake {
        Fake::serve(handler, Some(tokio_rustls::TlsAcceptor::from(tls))).await
    }

    async fn serve(
        handler: impl Fn(&Seen, &str) -> Reply + Send + Sync + 'static,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = match tls {
            Some(_) => format!("https://localhost:{port}"),
            None => format!("http://127.0.0.1:{port}"),
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let task = tokio::spawn({
            let (log, url) = (log.clone(), url.clone());
            async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let (log, url, handler) = (log.clone(), url.clone(), handler.clone());
                    let service = service_fn(move |req: Request<Incoming>| {
                        let (log, url, handler) = (log.clone(), url.clone(), handler.clone());
                        async move { Ok::<_, Infallible>(answer(req, &log, &url, &handler).await) }
                    });
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let http = hyper::server::conn::http1::Builder::new();
                        let _ = match tls {
                            None => http.serve_connection(TokioIo::new(stream), service).await,
                            Some(tls) => match tls.accept(stream).await {
                                Ok(stream) => {
                                    http.serve_connection(TokioIo::new(stream), service).await
                                }
                                Err(_) => return,
                            },
                        };
                    });
                }
            }
        });
        Fake { url, log, task }
    }

    pub(crate) fn log(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    /// The paths requested, in order.
    pub(crate) fn paths(&self) -> Vec<String> {
        self.log().iter().map(|s| s.path().to_owned()).collect()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    req: Request<Incoming>,
    log: &Mutex<Vec<Seen>>,
    url: &str,
    handler: &Handler,
) -> Response<Full<Bytes>> {
    let method = req.method().to_string();
    let target = req.uri().to_string();
    let header = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (authorization, dpop) = (header("authorization"), header("dpop"));
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let seen = Seen {
        method,
        target,
        authorization,
        dpop,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    log.lock().unwrap().push(seen.clone());
    let reply = handler(&seen, url);
    let mut response = Response::builder().status(reply.status);
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response.body(Full::new(Bytes::from(reply.body))).unwrap()
}
