//! Encodes a few JSON-RPC messages as an SSE stream, then scans the stream back in small chunks
//! and prints each message, as a client reading a Streamable HTTP response would.
//!
//! ```text
//! cargo run --example sse_roundtrip
//! ```

use bytes::BytesMut;
use mcp_streamable_http::jsonrpc::{
    Body, Message, Notification, Request, Response, parse, to_raw_value,
};
use mcp_streamable_http::sse::{Event, Scanner};
use serde_json::json;

fn main() -> anyhow::Result<()> {
    let messages: Vec<Message> = vec![
        Request::new(
            1,
            "tools/call",
            Some(to_raw_value(&json!({"name": "echo"}))?),
        )
        .into(),
        Notification::new(
            "notifications/progress",
            Some(to_raw_value(&json!({"progressToken": 1, "progress": 0.5}))?),
        )
        .into(),
        Response::success(1.into(), to_raw_value(&json!({"content": []}))?).into(),
    ];

    // The server side: one event per message, ids naming the stream and the position in it.
    let mut wire = BytesMut::new();
    for (i, message) in messages.iter().enumerate() {
        let data = String::from_utf8(message.to_vec())?;
        Event::new(data)
            .with_id(format!("1_{i}"))
            .encode(&mut wire)?;
    }
    println!(
        "encoded {} messages into {} bytes of SSE",
        messages.len(),
        wire.len()
    );

    // The client side: feed the bytes in 7-byte chunks, as a network might deliver them.
    let mut scanner = Scanner::new();
    let mut received = Vec::new();
    for chunk in wire.chunks(7) {
        scanner.feed(chunk);
        while let Some(event) = scanner.next_event()? {
            let Body::Single(message) = parse(event.data.as_bytes())? else {
                anyhow::bail!("a batch in an SSE event");
            };
            println!(
                "event id={} {}",
                event.id.as_deref().unwrap_or("-"),
                describe(&message)
            );
            received.push(message);
        }
    }
    scanner.finish();
    anyhow::ensure!(
        received == messages,
        "the messages did not survive the round trip"
    );
    println!(
        "all {} messages round-tripped; last event id {:?}",
        received.len(),
        scanner.last_event_id()
    );
    Ok(())
}

fn describe(message: &Message) -> String {
    match message {
        Message::Request(r) => format!("request {} {}", r.id, r.method),
        Message::Notification(n) => format!("notification {}", n.method),
        Message::Response(r) => {
            let id = r
                .id()
                .map_or_else(|| "null".to_owned(), |id| id.to_string());
            match r.result() {
                Ok(result) => format!("response to {id}: {}", result.get()),
                Err(e) => format!("error response to {id}: {}", e.message),
            }
        }
    }
}
