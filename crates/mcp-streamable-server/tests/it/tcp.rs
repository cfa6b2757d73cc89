//! Serving over loopback TCP: a bare hyper server (hyper-util's `auto::Builder`, HTTP/1 and
//! HTTP/2) on an OS-picked port, and a hyper client.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use mcp_streamable_server::StreamableHttpService;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::harness::ACCEPT_BOTH;

/// A server on `127.0.0.1:0`; it stops accepting when dropped.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

impl Server {
    pub(crate) fn uri(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

pub(crate) async fn serve(service: StreamableHttpService) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, mut stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        // Bounded by the test: ends when the `Server` is dropped.
        loop {
            let (tcp, _) = tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => accepted.unwrap(),
            };
            tcp.set_nodelay(true).unwrap();
            let service = service.clone();
            tokio::spawn(async move {
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    Server { addr, _stop: stop }
}

pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub(crate) fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

pub(crate) fn post(uri: &str, session: Option<&str>, body: String) -> Request<Full<Bytes>> {
    let mut b = Request::post(uri)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json");
    if let Some(id) = session {
        b = b.header("mcp-session-id", id);
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

pub(crate) fn get(uri: &str, session: &str, last_event_id: Option<&str>) -> Request<Full<Bytes>> {
    let mut b = Request::get(uri)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session);
    if let Some(id) = last_event_id {
        b = b.header("last-event-id", id);
    }
    b.body(Full::default()).unwrap()
}

pub(crate) fn delete(uri: &str, session: &str) -> Request<Full<Bytes>> {
    Request::delete(uri)
        .header("mcp-session-id", session)
        .body(Full::default())
        .unwrap()
}

/// An SSE reader over a hyper client response.
pub(crate) struct Sse {
    body: Incoming,
    scanner: mcp_sse::Scanner,
}

impl Sse {
    pub(crate) fn new(response: Response<Incoming>) -> Sse {
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Sse {
            body: response.into_body(),
            scanner: mcp_sse::Scanner::new(),
        }
    }

    pub(crate) async fn next(&mut self) -> Option<mcp_sse::Event> {
        use http_body_util::BodyExt;
        // Bounded in time even when keep-alive comments keep coming.
        let deadline = tokio::time::Instant::now() + crate::harness::WAIT;
        loop {
            if let Some(event) = self.scanner.next_event().unwrap() {
                // Priming events (an id, empty data) are not messages.
                if !event.data.is_empty() {
                    return Some(event);
                }
                continue;
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .expect("a frame in time")?;
            if let Ok(data) = frame.expect("the body reads").into_data() {
                self.scanner.feed(&data);
            }
        }
    }

    pub(crate) fn last_event_id(&self) -> &str {
        self.scanner.last_event_id()
    }

    /// Reads until an event id is known (a priming event's, say); returns it. Bounded in time.
    pub(crate) async fn until_id(&mut self) -> String {
        use http_body_util::BodyExt;
        let deadline = tokio::time::Instant::now() + crate::harness::WAIT;
        while self.scanner.last_event_id().is_empty() {
            while self.scanner.next_event().unwrap().is_some() {}
            if !self.scanner.last_event_id().is_empty() {
                break;
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .expect("a frame in time")
                .expect("an event id before the end");
            if let Ok(data) = frame.expect("the body reads").into_data() {
                self.scanner.feed(&data);
            }
        }
        self.scanner.last_event_id().to_owned()
    }
}

/// Reads a whole body.
pub(crate) async fn body_bytes(response: Response<Incoming>) -> Bytes {
    use http_body_util::BodyExt;
    tokio::time::timeout(crate::harness::WAIT, response.into_body().collect())
        .await
        .expect("the whole body in time")
        .unwrap()
        .to_bytes()
}
