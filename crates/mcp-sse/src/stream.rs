//! [`EventStream`]: a [`Scanner`] over a stream of body chunks.

use std::{
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use futures_core::{FusedStream, Stream};
use pin_project_lite::pin_project;

use crate::{Event, Scanner, StreamError};

pin_project! {
    /// Events read from a stream of byte chunks, such as an HTTP response body.
    ///
    /// The chunks can be anything that is `AsRef<[u8]>` (`Bytes`, `Vec<u8>`, ...). Errors of the
    /// source come out as [`StreamError::Source`] and oversized events as [`StreamError::Scan`];
    /// neither ends the stream. When the source ends, the unfinished event is dropped (E4) and
    /// the stream ends.
    ///
    /// A client that reconnects reads [`last_event_id`](EventStream::last_event_id) and
    /// [`retry`](EventStream::retry), and can carry the scanner over to the next response with
    /// [`into_scanner`](EventStream::into_scanner) and [`with_scanner`](EventStream::with_scanner).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use futures_util::{StreamExt, stream};
    /// use mcp_sse::EventStream;
    ///
    /// let body = stream::iter([Ok::<_, std::io::Error>(&b"id: 1\ndata: a"[..]), Ok(b"\n\n")]);
    /// let mut events = EventStream::new(body);
    /// let event = events.next().await.unwrap().unwrap();
    /// assert_eq!(event.data, "a");
    /// assert!(events.next().await.is_none());
    /// assert_eq!(events.last_event_id(), "1");
    /// # }
    /// ```
    #[derive(Debug)]
    pub struct EventStream<S> {
        #[pin]
        source: S,
        scanner: Scanner,
        done: bool,
    }
}

impl<S> EventStream<S> {
    /// Events read from `source` with a default [`Scanner`].
    pub fn new(source: S) -> EventStream<S> {
        EventStream::with_scanner(source, Scanner::new())
    }

    /// Events read from `source` with `scanner`: one with another size bound, or the scanner of
    /// the previous connection, so that the last event id and retry carry over.
    ///
    /// Whatever the scanner still held is dropped: the new source is a new stream.
    pub fn with_scanner(source: S, mut scanner: Scanner) -> EventStream<S> {
        scanner.finish();
        EventStream {
            source,
            scanner,
            done: false,
        }
    }

    /// The scanner, for its [`last_event_id`](Scanner::last_event_id), [`retry`](Scanner::retry)
    /// and bound.
    pub fn scanner(&self) -> &Scanner {
        &self.scanner
    }

    /// The id to send as `Last-Event-ID` when reconnecting; see [`Scanner::last_event_id`].
    pub fn last_event_id(&self) -> &str {
        self.scanner.last_event_id()
    }

    /// The reconnection time the server asked for, if any; see [`Scanner::retry`].
    pub fn retry(&self) -> Option<Duration> {
        self.scanner.retry()
    }

    /// The scanner, dropping the source: to read the next connection of the same stream.
    pub fn into_scanner(self) -> Scanner {
        self.scanner
    }
}

impl<S, B, E> Stream for EventStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<Event, StreamError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            if *this.done {
                return Poll::Ready(None);
            }
            match this.scanner.next_event() {
                Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                Ok(None) => {}
                Err(error) => return Poll::Ready(Some(Err(StreamError::Scan(error)))),
            }
            match ready!(this.source.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => this.scanner.feed(chunk.as_ref()),
                Some(Err(error)) => return Poll::Ready(Some(Err(StreamError::Source(error)))),
                None => {
                    this.scanner.finish();
                    *this.done = true;
                }
            }
        }
    }
}

impl<S, B, E> FusedStream for EventStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    fn is_terminated(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use futures_util::{StreamExt, stream};

    use super::*;
    use crate::ScanError;

    #[tokio::test]
    async fn yields_events_then_ends_and_stays_ended() {
        let chunks = [
            Ok::<_, std::io::Error>(b"data: a\n\nda".to_vec()),
            Ok(b"ta: b\n\n".to_vec()),
        ];
        let mut events = EventStream::new(stream::iter(chunks));
        assert_eq!(
            events.next().await.map(Result::ok),
            Some(Some(Event::new("a")))
        );
        assert_eq!(
            events.next().await.map(Result::ok),
            Some(Some(Event::new("b")))
        );
        assert!(!events.is_terminated());
        assert!(events.next().await.is_none());
        assert!(events.is_terminated());
        assert!(events.next().await.is_none());
    }

    #[tokio::test]
    async fn scanner_carries_over_to_the_next_connection() {
        let first = stream::iter([Ok::<_, std::io::Error>(
            &b"retry: 9\nid: 4\ndata: a\n\ndata: cut"[..],
        )]);
        let mut events = EventStream::new(first);
        assert!(events.next().await.is_some_and(|event| event.is_ok()));
        assert!(events.next().await.is_none());
        let scanner = events.into_scanner();

        let second = stream::iter([Ok::<_, std::io::Error>(&b"data: b\n\n"[..])]);
        let mut events = EventStream::with_scanner(second, scanner);
        assert_eq!(events.last_event_id(), "4");
        assert_eq!(events.retry(), Some(Duration::from_millis(9)));
        assert_eq!(
            events.next().await.map(Result::ok),
            Some(Some(Event::new("b")))
        );
        assert_eq!(
            events.scanner().max_event_size(),
            crate::DEFAULT_MAX_EVENT_SIZE
        );
    }

    #[tokio::test]
    async fn scan_errors_do_not_end_the_stream() {
        let chunks = [Ok::<_, std::io::Error>(
            &b"data: too long\n\ndata: ok\n\n"[..],
        )];
        let events: Vec<_> =
            EventStream::with_scanner(stream::iter(chunks), Scanner::with_max_event_size(8))
                .collect()
                .await;
        assert!(matches!(
            events[..],
            [
                Err(StreamError::Scan(ScanError::EventTooLarge { limit: 8 })),
                Ok(_)
            ]
        ));
    }
}
