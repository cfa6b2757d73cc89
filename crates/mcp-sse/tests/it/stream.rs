//! [`EventStream`] over a stream of chunks: events, source errors and scan errors.

use std::{io, time::Duration};

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use mcp_sse::{Event, EventStream, ScanError, Scanner, StreamError};

fn chunk(bytes: &'static [u8]) -> Result<Bytes, io::Error> {
    Ok(Bytes::from_static(bytes))
}

#[tokio::test]
async fn events_come_from_chunks_split_anywhere() {
    let body = stream::iter([
        chunk(b"\xEF\xBB"),
        chunk(b"\xBFretry: 2000\r"),
        chunk(b"\nid: 0_1\r\ndata: {\"a\":"),
        chunk(b"1}\r\n\r"),
        chunk(b"\n: keep-alive\nevent: end\ndata\n\ndata: cut"),
    ]);
    let mut events = EventStream::new(body);
    let first = Event::new("{\"a\":1}")
        .with_id("0_1")
        .with_retry(Duration::from_secs(2));
    assert_eq!(events.next().await.map(Result::ok), Some(Some(first)));
    let second = Event::new("").with_name("end");
    assert_eq!(events.next().await.map(Result::ok), Some(Some(second)));
    assert!(events.next().await.is_none(), "the cut event is dropped");
    assert_eq!(events.last_event_id(), "0_1");
    assert_eq!(events.retry(), Some(Duration::from_secs(2)));
}

#[tokio::test]
async fn source_errors_and_scan_errors_come_out_and_the_stream_goes_on() {
    let body = stream::iter([
        chunk(b"data: a\n\n"),
        Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset")),
        chunk(b"data: far too long for the bound\n\ndata: b\n\n"),
    ]);
    let events: Vec<_> = EventStream::with_scanner(body, Scanner::with_max_event_size(16))
        .collect()
        .await;
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(matches!(&events[0], Ok(event) if event.data == "a"));
    assert!(
        matches!(&events[1], Err(StreamError::Source(error)) if error.kind() == io::ErrorKind::ConnectionReset)
    );
    assert!(matches!(
        &events[2],
        Err(StreamError::Scan(ScanError::EventTooLarge { limit: 16 }))
    ));
    assert!(matches!(&events[3], Ok(event) if event.data == "b"));
}

#[tokio::test]
async fn vec_chunks_work_too() {
    let body = stream::iter([Ok::<_, io::Error>(b"data: v\n\n".to_vec())]);
    let events: Vec<_> = EventStream::new(body).collect().await;
    assert!(matches!(&events[..], [Ok(event)] if event.data == "v"));
}
