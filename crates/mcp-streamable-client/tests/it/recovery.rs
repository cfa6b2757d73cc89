//! Recovering from what servers and networks do to connections: keep-alive connections closed
//! under a request, streams held open in silence, servers that go away.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_streamable_client::Family;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::over::{self, Io, Wire};
use super::*;

/// How many requests the stale-connection test sends.
const REQUESTS: i64 = 1000;

/// When a [`Closing`] server closes a connection after its response.
#[derive(Debug, Clone, Copy)]
enum Close {
    /// At once.
    AtOnce,
    /// Once the next request's first bytes came in: the worst moment, which a pooled client
    /// meets on every reuse.
    OnNextRequest,
    /// After the connection sat idle for [`IDLE_CLOSE`], as servers with a short keep-alive
    /// timeout do.
    WhenIdle,
}

/// How long a [`Close::WhenIdle`] connection stays open after its response.
const IDLE_CLOSE: Duration = Duration::from_millis(20);

/// A server that closes its connection after every response, without `Connection: close`:
/// by default at once after odd ones, and after even ones only once the next request's first
/// bytes came in. It counts the requests it answered, by JSON-RPC id.
struct Closing {
    wire: Wire,
    url: String,
    answered: Arc<Mutex<HashMap<Value, u32>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Closing {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Closing {
    async fn start(wire: Wire) -> Closing {
        Closing::start_with(wire, |served| {
            if served.is_multiple_of(2) {
                Close::OnNextRequest
            } else {
                Close::AtOnce
            }
        })
        .await
    }

    /// A server that closes its `n`th connection as `close(n)` says.
    async fn start_with(wire: Wire, close: fn(u64) -> Close) -> Closing {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = wire.url(listener.local_addr().unwrap());
        let answered = Arc::new(Mutex::new(HashMap::new()));
        let task = tokio::spawn({
            let answered = answered.clone();
            async move {
                let mut served = 0u64;
                while let Ok((tcp, _)) = listener.accept().await {
                    served += 1;
                    let (answered, close) = (answered.clone(), close(served));
                    tokio::spawn(async move {
                        if let Some(io) = wire.accept(tcp).await {
                            Closing::serve_one(io, answered, close).await;
                        }
                    });
                }
            }
        });
        Closing {
            wire,
            url,
            answered,
            task,
        }
    }

    /// Answers one request on `io`, then closes it (over TLS, without `close_notify`).
    async fn serve_one(mut io: Io, answered: Arc<Mutex<HashMap<Value, u32>>>, close: Close) {
        let Some((head, body)) = read_request(&mut io).await else {
            return;
        };
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let response = if head.starts_with("POST") && !json["id"].is_null() {
            *answered
                .lock()
                .unwrap()
                .entry(json["id"].clone())
                .or_default() += 1;
            let result = if json["method"] == "initialize" {
                fake::init_result(&json["id"])
            } else {
                fake::result(&json["id"], json!({}))
            };
            let event = format!("data: {result}\n\n");
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: s\r\n\
                 transfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n0\r\n\r\n",
                event.len()
            )
        } else if head.starts_with("POST") || head.starts_with("DELETE") {
            "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned()
        } else {
            "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n".to_owned()
        };
        if io.write_all(response.as_bytes()).await.is_err() || io.flush().await.is_err() {
            return;
        }
        match close {
            Close::AtOnce => {}
            Close::OnNextRequest => drop(over::tcp(&io).readable().await),
            Close::WhenIdle => tokio::time::sleep(IDLE_CLOSE).await,
        }
    }
}

/// Reads one HTTP/1.1 request with a `content-length` body: its head and its body.
pub(super) async fn read_request(
    tcp: &mut (impl tokio::io::AsyncRead + Unpin),
) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = tcp.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < end + length {
        let n = tcp.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[end..end + length].to_vec()))
}

#[tokio::test]
async fn requests_on_connections_the_server_closed_are_sent_again_once() {
    for &wire in Wire::HTTP1 {
        // A TLS handshake per request costs more: fewer of them make the point.
        let requests = if wire == Wire::Http1 {
            REQUESTS
        } else {
            REQUESTS / 5
        };
        let server = Closing::start(wire).await;
        let mut conn = connect(server.wire.session_builder(&server.url)).await;
        handshake(&mut conn).await;
        for id in 2..2 + requests {
            send(&conn, request(id, "ping"))
                .await
                .unwrap_or_else(|e| panic!("request {id} over {wire:?} failed: {e}"));
            let response = recv_response(&mut conn).await;
            assert!(!response.is_error(), "{response:?}");
        }
        let answered = server.answered.lock().unwrap().clone();
        assert_eq!(answered.len() as i64, requests + 1, "{wire:?}");
        let twice: Vec<_> = answered.iter().filter(|(_, n)| **n != 1).collect();
        assert!(
            twice.is_empty(),
            "answered more than once over {wire:?}: {twice:?}"
        );
    }
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_not_used() {
    for &wire in Wire::HTTP1 {
        let server = Closing::start_with(wire, |_| Close::WhenIdle).await;
        let builder = server
            .wire
            .session_builder(&server.url)
            .request_timeout(Duration::from_secs(5));
        let mut conn = connect(builder).await;
        handshake(&mut conn).await;
        for id in 2..7 {
            // The server closes the pooled connection meanwhile; the client's runtime sees it.
            tokio::time::sleep(IDLE_CLOSE * 5).await;
            let sent =
                tokio::time::timeout(Duration::from_secs(3), send(&conn, request(id, "ping")));
            sent.await
                .unwrap_or_else(|_| panic!("request {id} hung on a closed connection"))
                .unwrap_or_else(|e| panic!("request {id} over {wire:?} failed: {e}"));
            let response = recv_response(&mut conn).await;
            assert!(!response.is_error(), "{response:?}");
        }
        let answered = server.answered.lock().unwrap().clone();
        assert!(answered.values().all(|n| *n == 1), "{wire:?}: {answered:?}");
    }
}

/// A fake whose answer to `initialize` is an event stream that primes (event id `e1`) and then
/// says nothing but a comment every `comment_every`, if given; a GET resuming after `e1` gets
/// the result. The streams' senders are kept in the returned list, so that they stay open.
async fn silent_server(
    comment_every: Option<Duration>,
) -> (
    fake::Fake,
    Arc<Mutex<Vec<tokio::sync::mpsc::Sender<bytes::Bytes>>>>,
) {
    let held = Arc::new(Mutex::new(Vec::new()));
    let server = fake::Fake::start({
        let held = held.clone();
        move |req| {
            let held = held.clone();
            async move {
                if req.is_post("initialize") {
                    let (tx, response) = fake::sse_channel(4);
                    tx.send("id: e1\ndata:\n\n".into()).await.unwrap();
                    if let Some(every) = comment_every {
                        let tx = tx.clone();
                        tokio::spawn(async move {
                            for _ in 0..100 {
                                tokio::time::sleep(every).await;
                                if tx.send(": keep-alive\n\n".into()).await.is_err() {
                                    return;
                                }
                            }
                        });
                    }
                    held.lock().unwrap().push(tx);
                    return fake::with_session(response, fake::SESSION);
                }
                if req.method == http::Method::GET && req.header("last-event-id") == Some("e1") {
                    let event = format!("id: e2\ndata: {}\n\n", fake::init_result(&json!(1)));
                    return fake::sse(event);
                }
                fake::standard(&req)
            }
        }
    })
    .await;
    (server, held)
}

#[tokio::test]
async fn a_silent_stream_is_resumed_after_the_idle_timeout() {
    let (server, _held) = silent_server(None).await;
    let builder = builder(&server.url)
        .family(Family::Session)
        .standalone_stream(false)
        .sse_idle_timeout(Some(Duration::from_secs(2)));
    let mut conn = connect(builder).await;
    send(&conn, initialize(1)).await.unwrap();
    // Paused only now: the silence is waited for on the test clock, which moves on by itself
    // once every task waits; the POST's exchange on real sockets is over.
    tokio::time::pause();
    let init = recv_response(&mut conn).await;
    assert!(!init.is_error(), "{init:?}");
    let resumed = server
        .requests()
        .into_iter()
        .filter(|r| r.method == http::Method::GET);
    assert_eq!(resumed.count(), 1);
}

#[tokio::test]
async fn keep_alive_comments_hold_a_stream_open() {
    let (server, held) = silent_server(Some(Duration::from_millis(500))).await;
    let builder = builder(&server.url)
        .family(Family::Session)
        .standalone_stream(false)
        .sse_idle_timeout(Some(Duration::from_secs(2)));
    let mut conn = connect(builder).await;
    send(&conn, initialize(1)).await.unwrap();
    // Eight idle timeouts of comments, and no resumption.
    assert_quiet(&mut conn, Duration::from_secs(16)).await;
    assert_eq!(server.count(http::Method::GET), 0);
    let tx = held.lock().unwrap()[0].clone();
    let event = format!("id: e2\ndata: {}\n\n", fake::init_result(&json!(1)));
    tx.send(event.into()).await.unwrap();
    let init = recv_response(&mut conn).await;
    assert!(!init.is_error(), "{init:?}");
}

#[tokio::test]
async fn the_connection_closes_when_its_server_has_gone() {
    let streams = Arc::new(Mutex::new(Vec::new()));
    let server = fake::Fake::start({
        let streams = streams.clone();
        move |req| {
            let streams = streams.clone();
            async move {
                if req.method == http::Method::GET {
                    let (tx, response) = fake::sse_channel(4);
                    tx.send("id: g1\ndata:\n\n".into()).await.unwrap();
                    streams.lock().unwrap().push(tx);
                    return response;
                }
                fake::standard(&req)
            }
        }
    })
    .await;
    let mut conn = connect(builder(&server.url).family(Family::Session)).await;
    let sender = conn.sender();
    handshake(&mut conn).await;
    server
        .wait_for(|log| log.iter().any(|r| r.method == http::Method::GET))
        .await;
    assert!(!sender.is_closed());
    // The server goes: no more connections, and its stream ends.
    drop(server);
    streams.lock().unwrap().clear();
    tokio::time::pause();
    assert!(within(conn.recv()).await.unwrap().is_none());
    assert!(sender.is_closed());
}
