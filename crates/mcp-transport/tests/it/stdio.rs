use std::time::Duration;

use mcp_jsonrpc::{Message, RawValue, Request};
use mcp_transport::stdio::StdioConnection;
use mcp_transport::{Connection, ErrorKind, Sender};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};

use crate::{note, request};

type Conn = StdioConnection<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>;

/// A connection, and the raw other end of its wire.
fn wired() -> (Conn, DuplexStream) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(ours);
    (StdioConnection::new(r, w), theirs)
}

/// A connection reading `input` as its whole peer output.
async fn reading(input: &[u8]) -> Conn {
    let (conn, mut peer) = wired();
    peer.write_all(input).await.unwrap();
    peer.shutdown().await.unwrap();
    // Keep the peer's read side open by leaking it into a task that drains it.
    tokio::spawn(async move {
        let mut sink = Vec::new();
        let _ = peer.read_to_end(&mut sink).await;
    });
    conn
}

#[tokio::test]
async fn each_message_is_one_line() {
    let (conn, mut peer) = wired();
    let s = conn.sender();
    s.send(request(1).into()).await.unwrap();
    s.send(note("n").into()).await.unwrap();
    let mut buf = vec![0; 1024];
    let mut got = Vec::new();
    while got.iter().filter(|&&b| b == b'\n').count() < 2 {
        let n = tokio::time::timeout(Duration::from_secs(5), peer.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(
        String::from_utf8(got).unwrap(),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n"
    );
}

#[tokio::test]
async fn raw_line_breaks_in_payloads_do_not_break_framing() {
    let (conn, mut peer) = wired();
    let params = RawValue::from_string("{\n  \"a\": 1\r\n}".to_owned()).unwrap();
    let msg: Message = Request::new(1, "m", Some(params)).into();
    conn.sender().send(msg.into()).await.unwrap();
    drop(conn);
    let mut out = String::new();
    peer.read_to_string(&mut out).await.unwrap();
    assert_eq!(out.matches('\n').count(), 1, "{out:?}");
    let reread: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(reread["params"]["a"], 1);
}

#[tokio::test]
async fn reads_lines_batches_blank_lines_crlf_and_a_last_line_without_newline() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
        "\n   \n",
        "[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},{\"jsonrpc\":\"2.0\",\"method\":\"b\"}]\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"last\"}"
    );
    let mut conn = reading(input.as_bytes()).await;
    assert_eq!(conn.recv().await.unwrap(), Some(request(1)));
    assert_eq!(conn.recv().await.unwrap(), Some(note("a")));
    assert_eq!(conn.recv().await.unwrap(), Some(note("b")));
    assert_eq!(conn.recv().await.unwrap(), Some(note("last")));
    assert_eq!(conn.recv().await.unwrap(), None);
    assert_eq!(conn.recv().await.unwrap(), None);
}

#[tokio::test]
async fn an_invalid_line_is_reported_and_reading_goes_on() {
    let input = "not json\n{\"hello\":1}\n{\"jsonrpc\":\"2.0\",\"method\":\"ok\"}\n";
    let mut conn = reading(input.as_bytes()).await;
    let err = conn.recv().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidMessage);
    assert!(err.is_recoverable());
    let source = std::error::Error::source(&err).unwrap();
    let jsonrpc = source.downcast_ref::<mcp_jsonrpc::Error>().unwrap();
    assert_eq!(jsonrpc.code(), mcp_jsonrpc::code::PARSE_ERROR);
    let err = conn.recv().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidMessage);
    assert_eq!(conn.recv().await.unwrap(), Some(note("ok")));
}

#[tokio::test]
async fn a_line_over_the_bound_is_skipped_without_buffering_it() {
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"{}\"}}\n",
        "x".repeat(10_000)
    );
    let input = format!("{long}{{\"jsonrpc\":\"2.0\",\"method\":\"after\"}}\n");
    let mut conn = reading(input.as_bytes()).await.max_line_bytes(1024);
    let err = conn.recv().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MessageTooLarge);
    assert!(err.is_recoverable());
    assert_eq!(conn.recv().await.unwrap(), Some(note("after")));
    assert!(
        format!("{conn:?}").contains("buffered_line_bytes: 0"),
        "{conn:?}"
    );
}

#[tokio::test]
async fn a_peer_that_never_sends_a_newline_cannot_grow_memory() {
    let (conn, mut peer) = wired();
    let mut conn = conn.max_line_bytes(4096);
    let writer = tokio::spawn(async move {
        let chunk = vec![b'a'; 8192];
        // 8 MiB without a newline, then a real message.
        for _ in 0..1024 {
            peer.write_all(&chunk).await.unwrap();
        }
        peer.write_all(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"ok\"}\n")
            .await
            .unwrap();
        peer
    });
    let err = conn.recv().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MessageTooLarge);
    assert_eq!(conn.recv().await.unwrap(), Some(note("ok")));
    assert!(format!("{conn:?}").contains("buffered_line_bytes: 0"));
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn close_shuts_the_writer_and_ends_reading() {
    let (mut conn, mut peer) = wired();
    let sender = conn.sender();
    sender.send(note("bye").into()).await.unwrap();
    conn.close().await.unwrap();
    assert!(sender.is_closed());
    assert!(
        sender
            .send(note("late").into())
            .await
            .unwrap_err()
            .is_closed()
    );
    assert_eq!(conn.recv().await.unwrap(), None);
    let mut out = String::new();
    peer.read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}\n");
    conn.close().await.unwrap();
}

#[tokio::test]
async fn a_write_failure_is_an_io_error() {
    let (conn, peer) = wired();
    drop(peer);
    let err = conn.sender().send(note("x").into()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(!err.is_recoverable());
}
