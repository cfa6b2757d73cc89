//! The SSE body of a POST or GET: its prelude, then its stream's messages as SSE events, with
//! keep-alive comments when idle (S14, S15).

use std::collections::VecDeque;
use std::fmt;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use mcp_sse::EventRef;

use crate::core::session::reader::Reader;
use crate::core::session::state::Entry;
use crate::core::store::event_store::StoredEvent;
use crate::http::reply::keep_alive::KeepAlive;
use crate::protocol::EventId;

/// Most bytes written in one frame: large enough to batch a burst of small events into one
/// write, small enough to keep latency and memory per write bounded.
pub(crate) const MAX_FRAME: usize = 64 * 1024;

/// Writes `message` as one SSE event, with its id when events are kept.
pub(crate) fn frame(out: &mut BytesMut, id: Option<EventId>, message: &[u8]) {
    // Ids are digits and an underscore: nothing the encoder refuses.
    with_event(id, message, |event| {
        let _ = event.encode(out);
    });
}

/// The bytes [`frame`] writes.
fn frame_len(id: Option<EventId>, message: &[u8]) -> usize {
    let mut len = 0;
    with_event(id, message, |event| len = event.encoded_len());
    len
}

/// Calls `f` with `message` as an SSE event, with its id when events are kept; not at all
/// if the message is not UTF-8 (a bug: serde_json encoded it).
fn with_event(id: Option<EventId>, message: &[u8], mut f: impl FnMut(EventRef<'_>)) {
    let Ok(data) = std::str::from_utf8(message) else {
        tracing::error!(
            "an outgoing message is not UTF-8; it was encoded by serde_json, so this is a bug"
        );
        return;
    };
    let mut event = |id: Option<&str>| {
        f(EventRef {
            id,
            data,
            ..EventRef::default()
        })
    };
    match id {
        Some(id) => id.write(|id| event(Some(id))),
        None => event(None),
    }
}

/// Stored events of `stream` as SSE frames of about [`MAX_FRAME`] bytes at most: what a
/// resumption replays, and what the holder gives of a forward sent again after the last event
/// the asking node has.
pub(crate) fn replayed(stream: u64, events: &[StoredEvent]) -> Vec<Bytes> {
    let mut out = BytesMut::new();
    let mut frames = Vec::new();
    for event in events {
        frame(
            &mut out,
            Some(EventId::new(stream, event.index)),
            &event.message,
        );
        if out.len() >= MAX_FRAME {
            frames.push(out.split().freeze());
        }
    }
    if !out.is_empty() {
        frames.push(out.freeze());
    }
    frames
}

/// Writes a priming event (S14): an id to resume from (when there is one before the first
/// message), the reconnection delay, no data.
pub(crate) fn write_priming(out: &mut BytesMut, id: Option<EventId>, retry: Duration) {
    with_priming(id, retry, |event| {
        let _ = event.encode(out);
    });
}

/// The bytes [`write_priming`] writes.
fn priming_len(id: Option<EventId>, retry: Duration) -> usize {
    let mut len = 0;
    with_priming(id, retry, |event| len = event.encoded_len());
    len
}

/// Calls `f` with the priming event of [`write_priming`].
fn with_priming(id: Option<EventId>, retry: Duration, mut f: impl FnMut(EventRef<'_>)) {
    let mut event = |id: Option<&str>| {
        f(EventRef {
            id,
            retry: Some(retry),
            ..EventRef::default()
        })
    };
    match id {
        Some(id) => id.write(|id| event(Some(id))),
        None => event(None),
    }
}

fn priming(id: EventId, retry: Duration) -> Bytes {
    let mut out = BytesMut::new();
    write_priming(&mut out, Some(id), retry);
    out.freeze()
}

/// The SSE body of a POST or GET: first its prelude (priming event, comment, replayed events),
/// then the stream's messages as they come, with keep-alive comments when idle (S15).
pub(crate) struct SseBody {
    reader: Reader,
    prelude: VecDeque<Bytes>,
    /// The priming event's reconnection delay, while the event is still to open the first
    /// frame (S14).
    prime: Option<Duration>,
    /// A frame taken ahead of the first poll ([`SseBody::wait_first`]).
    early: Option<Bytes>,
    /// The comments an idle body writes (S15).
    keep_alive: KeepAlive,
    ended: bool,
    /// Counted as an open stream while it lives.
    #[cfg(feature = "otel")]
    _open: crate::core::telemetry::OpenStream,
}

impl fmt::Debug for SseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseBody")
            .field("stream", &self.reader.stream())
            .finish_non_exhaustive()
    }
}

impl SseBody {
    pub(crate) fn new(reader: Reader) -> Self {
        let keep_alive = KeepAlive::new(reader.session().shared.config.keep_alive);
        #[cfg(feature = "otel")]
        let _open = crate::core::telemetry::OpenStream::new(
            &reader.session().shared.telemetry,
            reader.stream() == crate::core::session::state::STANDALONE,
        );
        SseBody {
            reader,
            prelude: VecDeque::new(),
            prime: None,
            early: None,
            keep_alive,
            ended: false,
            #[cfg(feature = "otel")]
            _open,
        }
    }

    pub(crate) fn push_prelude(&mut self, bytes: Bytes) {
        self.prelude.push_back(bytes);
    }

    /// Opens the stream with a priming event (S14) before its first message.
    pub(crate) fn prime(&mut self, retry: Duration) {
        self.prime = Some(retry);
    }

    pub(crate) fn reader(&self) -> &Reader {
        &self.reader
    }

    pub(crate) fn reader_mut(&mut self) -> &mut Reader {
        &mut self.reader
    }

    fn priming_id(&self) -> EventId {
        EventId::new(self.reader.stream(), 0)
    }

    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(bytes) = self.prelude.pop_front().or_else(|| self.early.take()) {
            return Poll::Ready(Some(bytes));
        }
        if self.ended {
            return Poll::Ready(None);
        }
        match self.poll_live(cx) {
            Poll::Ready(frame) => {
                self.keep_alive.sent();
                Poll::Ready(frame)
            }
            Poll::Pending => {
                if let Some(retry) = self.prime.take() {
                    // Nothing to say yet: the priming event goes alone, for the client to have
                    // an id to resume from.
                    return Poll::Ready(Some(priming(self.priming_id(), retry)));
                }
                self.keep_alive.poll(cx)
            }
        }
    }

    /// The stream's next frame: what is queued for this body, opened by the priming event if it
    /// is still to be written; `Ready(None)` once the body has ended.
    fn poll_live(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let with_id = self.reader.session().has_store();
        let stream = self.reader.stream();
        match self.reader.poll_take(cx, MAX_FRAME) {
            Poll::Ready(Some(taken)) => {
                let id = |e: &Entry| with_id.then(|| EventId::new(stream, e.index));
                // Made to the frame's size: frozen, it is taken over as it is, with no
                // allocation to keep track of spare room.
                let priming = self.prime.map(|retry| (self.priming_id(), retry));
                let len = priming.map_or(0, |(p, retry)| priming_len(Some(p), retry))
                    + taken
                        .iter()
                        .map(|e| frame_len(id(e), &e.json))
                        .sum::<usize>();
                let mut out = BytesMut::with_capacity(len);
                if let Some((p, retry)) = priming {
                    self.prime = None;
                    write_priming(&mut out, Some(p), retry);
                }
                for e in taken.iter() {
                    frame(&mut out, id(e), &e.json);
                }
                debug_assert_eq!(out.len(), len, "a frame longer or shorter than foretold");
                Poll::Ready(Some(out.freeze()))
            }
            Poll::Ready(None) => {
                self.ended = true;
                self.reader.end();
                match self.prime.take() {
                    Some(retry) => Poll::Ready(Some(priming(self.priming_id(), retry))),
                    None => Poll::Ready(None),
                }
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Waits until the stream has something for this body to write, or nothing more to come
    /// (over, replaced, or the session gone), and takes that first frame ahead of the first
    /// poll: what the head of a reply waits for, so that the head and the answer leave in one
    /// write.
    pub(crate) async fn wait_first(&mut self) {
        std::future::poll_fn(|cx| {
            if self.ended || self.early.is_some() {
                return Poll::Ready(());
            }
            self.poll_live(cx).map(|frame| self.early = frame)
        })
        .await;
    }
}
