//! HTTP/1.1 as servers write it, read by the client's own connections: responses cut anywhere,
//! bodies framed each way, interim responses, `Connection: close`, large requests, heads over
//! the bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::over::{self, Io, Wire};
use super::recovery::read_request;
use super::*;

/// How a [`Raw`] server writes the answer to a request, given its id and its result.
type Write = fn(&Value, String) -> Answer;

/// An answer's bytes, and how to send them.
struct Answer {
    bytes: Vec<u8>,
    /// One byte per write, each its own TCP segment (the client sets `TCP_NODELAY`, and so
    /// does this server).
    trickle: bool,
    /// The server closes the connection after the answer (over TLS, with `close_notify`).
    close: bool,
    /// It closes it abruptly instead: over TLS, without `close_notify`.
    abrupt: bool,
    /// Once the connection sat idle for [`IDLE_408`] without a request coming in, the server
    /// writes a `408` to no request and closes it, as some servers do at the end of their
    /// keep-alive timeout.
    then_408: bool,
}

/// How long a connection sits idle before a `then_408` server writes its `408`.
const IDLE_408: Duration = Duration::from_millis(20);

const REQUEST_TIMEOUT: &[u8] =
    b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

impl Answer {
    fn new(bytes: impl Into<Vec<u8>>) -> Answer {
        Answer {
            bytes: bytes.into(),
            trickle: false,
            close: false,
            abrupt: false,
            then_408: false,
        }
    }
}

/// A server that speaks HTTP/1.1 from scratch: requests with an id get what `write` makes of
/// their result, others `202 Accepted`; connections stay open unless the answer says. It counts
/// the connections it accepted and the bytes of the largest request body.
struct Raw {
    wire: Wire,
    url: String,
    connections: Arc<AtomicUsize>,
    largest_body: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Raw {
    async fn start(wire: Wire, write: Write) -> Raw {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = wire.url(listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let largest_body = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let (connections, largest) = (connections.clone(), largest_body.clone());
            async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    tcp.set_nodelay(true).unwrap();
                    let largest = largest.clone();
                    tokio::spawn(async move {
                        let Some(mut io) = wire.accept(tcp).await else {
                            return;
                        };
                        while let Some((_, body)) = read_request(&mut io).await {
                            largest.fetch_max(body.len(), Ordering::SeqCst);
                            let answer = answer(write, &body);
                            if write_answer(&mut io, &answer).await.is_err() || answer.abrupt {
                                return;
                            }
                            if answer.close {
                                let _ = io.shutdown().await;
                                return;
                            }
                            let idle = tokio::time::timeout(IDLE_408, over::tcp(&io).readable());
                            if answer.then_408 && idle.await.is_err() {
                                let _ = write_all(&mut io, REQUEST_TIMEOUT).await;
                                return;
                            }
                        }
                    });
                }
            }
        });
        Raw {
            wire,
            url,
            connections,
            largest_body,
            task,
        }
    }
}

fn answer(write: Write, body: &[u8]) -> Answer {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let id = &json["id"];
    if id.is_null() {
        return Answer::new(&b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"[..]);
    }
    let result = if json["method"] == "initialize" {
        fake::init_result(id)
    } else {
        let size = json["params"]["padding"].as_str().map_or(0, str::len);
        fake::result(id, serde_json::json!({ "size": size }))
    };
    write(id, result)
}

async fn write_answer(io: &mut Io, answer: &Answer) -> std::io::Result<()> {
    if !answer.trickle {
        return write_all(io, &answer.bytes).await;
    }
    for byte in &answer.bytes {
        write_all(io, std::slice::from_ref(byte)).await?;
        tokio::task::yield_now().await;
    }
    Ok(())
}

/// Writes `bytes` and flushes them out of TLS, where there is one.
async fn write_all(io: &mut Io, bytes: &[u8]) -> std::io::Result<()> {
    io.write_all(bytes).await?;
    io.flush().await
}

/// An event stream answer, chunked, with the session header.
fn chunked_sse(result: &str) -> Vec<u8> {
    let event = format!("id: 1\ndata: {result}\n\n");
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nMcp-Session-Id: s\r\n\
         Transfer-Encoding: chunked\r\n\r\n{:x};ext=1\r\n{event}\r\n0\r\nx-trailer: t\r\n\r\n",
        event.len()
    )
    .into_bytes()
}

/// A JSON answer with its length.
fn sized_json(result: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s\r\n\
         content-length: {}\r\n\r\n{result}",
        result.len()
    )
    .into_bytes()
}

/// A connection to `server` in a session of the 2025 protocol, initialised, without the
/// standalone stream.
async fn session(server: &Raw) -> ClientConnection {
    let mut conn = connect(server.wire.session_builder(&server.url)).await;
    handshake(&mut conn).await;
    conn
}

/// `answer` with the header `line` (CRLF included) first after its status line.
fn with_header(mut answer: Vec<u8>, line: &[u8]) -> Vec<u8> {
    let at = answer.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    answer.splice(at..at, line.iter().copied());
    answer
}

/// Connects, initialises and makes `calls` calls; each must succeed. Returns the results.
async fn call(server: &Raw, calls: i64) -> Vec<Value> {
    let mut conn = session(server).await;
    let mut results = Vec::new();
    for id in 2..2 + calls {
        send(&conn, request(id, "ping"))
            .await
            .unwrap_or_else(|e| panic!("request {id} failed: {e}"));
        let response = recv_response(&mut conn).await;
        let result = response.result().unwrap_or_else(|e| panic!("{e:?}"));
        results.push(serde_json::from_str(result.get()).unwrap());
    }
    results
}

#[tokio::test]
async fn answers_cut_into_single_bytes_are_read() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |_, result| Answer {
            trickle: true,
            ..Answer::new(chunked_sse(&result))
        })
        .await;
        assert_eq!(call(&server, 5).await.len(), 5, "{wire:?}");
        // Each answer was read to its end, and its connection went back to the pool: a call may
        // go before the last bytes of the answer to the one before came, and so on a second
        // connection, but no call needs a third.
        assert!(server.connections.load(Ordering::SeqCst) <= 2, "{wire:?}");
    }
}

#[tokio::test]
async fn sized_json_answers_keep_their_connection() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |_, result| Answer::new(sized_json(&result))).await;
        assert_eq!(call(&server, 5).await.len(), 5, "{wire:?}");
        assert_eq!(server.connections.load(Ordering::SeqCst), 1, "{wire:?}");
    }
}

#[tokio::test]
async fn an_answer_with_connection_close_is_the_last_on_its_connection() {
    for &wire in Wire::HTTP1 {
        // The server keeps the connection open, and would answer on it: only the header tells.
        let server = Raw::start(wire, |_, result| {
            Answer::new(with_header(sized_json(&result), b"Connection: close\r\n"))
        })
        .await;
        assert_eq!(call(&server, 3).await.len(), 3);
        // `initialize` on the first; the notification's `202`, which keeps its connection, on the
        // second, which then carries the first call; each later call on one more.
        assert_eq!(server.connections.load(Ordering::SeqCst), 4, "{wire:?}");
    }
}

#[tokio::test]
async fn a_408_the_server_wrote_on_an_idle_connection_answers_no_request() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |_, result| Answer {
            then_408: true,
            ..Answer::new(sized_json(&result))
        })
        .await;
        let mut conn = session(&server).await;
        for id in 2..5 {
            // The server writes its 408 and closes meanwhile; the client's runtime sees it.
            tokio::time::sleep(IDLE_408 * 5).await;
            send(&conn, request(id, "ping")).await.unwrap();
            let response = recv_response(&mut conn).await;
            assert!(!response.is_error(), "request {id}: {response:?}");
        }
    }
}

#[tokio::test]
async fn configured_framing_headers_do_not_frame_the_requests() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |_, result| Answer::new(sized_json(&result))).await;
        let builder = wire
            .session_builder(&server.url)
            .header("content-length", "5")
            .header("transfer-encoding", "chunked");
        let mut conn = connect(builder).await;
        handshake(&mut conn).await;
        send(&conn, request(2, "ping")).await.unwrap();
        let response = recv_response(&mut conn).await;
        assert!(!response.is_error(), "{response:?}");
    }
}

#[tokio::test]
async fn a_body_that_runs_to_the_close_is_read_to_it() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |_, result| Answer {
            close: true,
            ..Answer::new(format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s\r\n\r\n{result}"
            ))
        })
        .await;
        assert_eq!(call(&server, 2).await.len(), 2);
    }
}

#[cfg(feature = "rustls")]
#[tokio::test]
async fn over_tls_a_body_that_runs_to_the_close_needs_the_closure_alert() {
    // RFC 9112, section 9.8: without `close_notify`, the close may be an attacker's cut.
    let server = Raw::start(Wire::Tls1, |id, result| {
        if *id == 1 {
            return Answer::new(sized_json(&result));
        }
        Answer {
            abrupt: true,
            ..Answer::new(format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{result}"
            ))
        }
    })
    .await;
    let error = broken_call(&server).await;
    assert!(error.contains("response lost"), "{error}");
}

#[tokio::test]
async fn interim_answers_before_the_answer_are_skipped() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |_, result| {
            let mut bytes =
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n"
                    .to_vec();
            bytes.extend(sized_json(&result));
            Answer::new(bytes)
        })
        .await;
        assert_eq!(call(&server, 2).await.len(), 2);
        assert_eq!(server.connections.load(Ordering::SeqCst), 1, "{wire:?}");
    }
}

#[tokio::test]
async fn a_large_request_body_arrives_whole() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |_, result| Answer::new(sized_json(&result))).await;
        let mut conn = session(&server).await;
        let padding = "x".repeat(1 << 20);
        let params = to_raw_value(&serde_json::json!({ "padding": padding })).unwrap();
        send(&conn, Request::new(2, "ping", Some(params)).into())
            .await
            .unwrap();
        let response = recv_response(&mut conn).await;
        let result: Value = serde_json::from_str(response.result().unwrap().get()).unwrap();
        assert_eq!(result["size"], 1 << 20);
        assert!(server.largest_body.load(Ordering::SeqCst) > 1 << 20);
    }
}

/// Initialises against `server`, whose answers to calls are broken, and returns the error the
/// call meets, as a response or as the send's failure with its causes.
async fn broken_call(server: &Raw) -> String {
    let mut conn = session(server).await;
    if let Err(e) = send(&conn, request(2, "ping")).await {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            text = format!("{text}: {cause}");
            source = cause.source();
        }
        return text;
    }
    let response = recv_response(&mut conn).await;
    assert!(response.is_error(), "{response:?}");
    format!("{response:?}")
}

#[tokio::test]
async fn a_body_cut_short_by_the_close_fails_its_call() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |id, result| {
            if *id == 1 {
                return Answer::new(sized_json(&result));
            }
            let mut bytes = sized_json(&result);
            bytes.truncate(bytes.len() - 5);
            Answer {
                close: true,
                ..Answer::new(bytes)
            }
        })
        .await;
        broken_call(&server).await;
    }
}

#[tokio::test]
async fn a_head_over_the_bound_fails_its_call() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |id, result| {
            if *id == 1 {
                return Answer::new(sized_json(&result));
            }
            let filler = format!("x-filler: {}\r\n", "f".repeat(1000)).repeat(70);
            let mut bytes = b"HTTP/1.1 200 OK\r\n".to_vec();
            bytes.extend(filler.as_bytes());
            bytes.extend(&sized_json(&result)[b"HTTP/1.1 200 OK\r\n".len()..]);
            Answer::new(bytes)
        })
        .await;
        let error = broken_call(&server).await;
        assert!(error.contains("larger than"), "{error}");
    }
}

#[tokio::test]
async fn conflicting_lengths_fail_their_call() {
    for &wire in Wire::HTTP1 {
        let server = Raw::start(wire, |id, result| {
            if *id == 1 {
                return Answer::new(sized_json(&result));
            }
            Answer::new(with_header(sized_json(&result), b"content-length: 1\r\n"))
        })
        .await;
        let error = broken_call(&server).await;
        assert!(error.contains("Content-Length"), "{error}");
    }
}
