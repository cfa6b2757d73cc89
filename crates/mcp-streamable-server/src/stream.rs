//! The streams of a session: what waits to be written on each, and the SSE body that writes it.

use std::collections::VecDeque;
use std::fmt;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use mcp_sse::EventRef;
use tokio::time::{Instant, Sleep};

use crate::Config;
use crate::session::{Session, State};

/// The standalone stream, read by GET (S10). Request streams are numbered from 1.
pub(crate) const STANDALONE: u64 = 0;

/// Most bytes written in one frame: large enough to batch a burst of small events into one
/// write, small enough to keep latency and memory per write bounded.
const MAX_FRAME: usize = 64 * 1024;

/// One outgoing message, waiting to be written.
pub(crate) struct Entry {
    pub(crate) index: u64,
    pub(crate) json: Bytes,
    pub(crate) is_response: bool,
}

/// The connection reading a stream: an SSE body or a JSON-mode POST waiting for its answer.
/// A newer one replaces it (S12); the generation tells the old one it was replaced.
struct Conn {
    generation: u64,
    waker: Option<Waker>,
}

pub(crate) struct Stream {
    pub(crate) standalone: bool,
    /// Requests of this stream not answered yet.
    pub(crate) pending: usize,
    pub(crate) next_index: u64,
    outbox: VecDeque<Entry>,
    outbox_bytes: usize,
    conn: Option<Conn>,
    /// Every request of the stream has its response queued: the stream ends once written.
    finished: bool,
}

impl Stream {
    /// A stream whose first message gets index `first` (1 when index 0 is a priming event's).
    pub(crate) fn new(standalone: bool, first: u64) -> Self {
        Stream {
            standalone,
            pending: 0,
            next_index: first,
            outbox: VecDeque::new(),
            outbox_bytes: 0,
            conn: None,
            finished: false,
        }
    }

    /// Makes `generation` the stream's reader; returns the waker of the one it replaces, which
    /// must be woken (after the lock is released) so that it ends, and whether there was one.
    pub(crate) fn attach(&mut self, generation: u64) -> (Option<Waker>, bool) {
        let old = self.conn.replace(Conn {
            generation,
            waker: None,
        });
        let replaced = old.is_some();
        (old.and_then(|c| c.waker), replaced)
    }

    pub(crate) fn take_waker(&mut self) -> Option<Waker> {
        self.conn.as_mut().and_then(|c| c.waker.take())
    }

    /// Lets go of the reader: `Some(its waker, to wake)` if there was one.
    pub(crate) fn detach_reader(&mut self) -> Option<Option<Waker>> {
        self.conn.take().map(|c| c.waker)
    }

    pub(crate) fn outbox_bytes(&self) -> usize {
        self.outbox_bytes
    }

    /// The index of the oldest message waiting for a reader, if any.
    pub(crate) fn first_queued(&self) -> Option<u64> {
        self.outbox.front().map(|e| e.index)
    }

    /// For a closing session: a stream whose reader has messages still to write stays, to end
    /// once they are written (true); any other goes (false).
    pub(crate) fn flush(&mut self) -> bool {
        if self.conn.is_some() && !self.outbox.is_empty() {
            self.finished = true;
            return true;
        }
        false
    }

    /// The bytes this stream holds beyond what its reader will write next: a connected reader
    /// about to write one large message is not behind, whatever the message's size (S22).
    fn backlog(&self) -> usize {
        match (&self.conn, self.outbox.front()) {
            (Some(_), Some(next)) => self.outbox_bytes - next.json.len(),
            _ => self.outbox_bytes,
        }
    }

    fn is_read_by(&self, generation: u64) -> bool {
        self.conn
            .as_ref()
            .is_some_and(|c| c.generation == generation)
    }

    fn is_done(&self) -> bool {
        self.finished && self.conn.is_none() && self.outbox.is_empty()
    }

    fn clear_outbox(&mut self, buffered: &mut usize) -> usize {
        let n = self.outbox.len();
        *buffered -= self.outbox_bytes;
        self.outbox_bytes = 0;
        self.outbox.clear();
        n
    }
}

/// Queues `entry` on `stream` for its reader, then keeps the session within its budget (S22).
/// The readers to wake are added to `wakers`, to be woken once the lock is released.
pub(crate) fn push(
    st: &mut State,
    session: &Session,
    stream: u64,
    entry: Entry,
    completes: bool,
    wakers: &mut Vec<Waker>,
) {
    let has_store = session.has_store();
    let span = &session.span;
    let Some(s) = st.streams.get_mut(&stream) else {
        // The session closed meanwhile.
        return;
    };
    if completes {
        s.finished = true;
    }
    if s.conn.is_some() || s.standalone {
        s.outbox_bytes += entry.json.len();
        st.buffered += entry.json.len();
        s.outbox.push_back(entry);
        wakers.extend(s.take_waker());
    } else if !has_store {
        // S13: the client closed this POST's connection and nothing keeps messages to resume
        // from.
        tracing::debug!(parent: span, stream, "no connection reads this stream and there is no event store: message dropped");
    }
    if s.is_done() {
        st.streams.remove(&stream);
    }
    shed(st, &session.shared.config, has_store, span, wakers);
}

/// While the session holds more than its budget, sheds the largest backlog: a reader that far
/// behind is disconnected (it resumes from the event store if there is one), and the standalone
/// stream with no reader loses its oldest messages. The message a connected reader is about to
/// write is no backlog, so the bound is the budget plus one message per connected reader.
fn shed(
    st: &mut State,
    config: &Config,
    has_store: bool,
    span: &tracing::Span,
    wakers: &mut Vec<Waker>,
) {
    while st.buffered > config.max_buffered_bytes {
        let Some((&id, s)) = st
            .streams
            .iter_mut()
            .filter(|(_, s)| s.backlog() > 0)
            .max_by_key(|(_, s)| s.backlog())
        else {
            return;
        };
        if let Some(conn) = s.conn.take() {
            let dropped = s.clear_outbox(&mut st.buffered);
            st.attached -= 1;
            if has_store {
                tracing::debug!(parent: span, stream = id, "reader too far behind: disconnected, it can resume from the event store");
            } else {
                tracing::warn!(parent: span, stream = id, dropped, "reader too far behind: disconnected, and its unread messages dropped (no event store)");
            }
            wakers.extend(conn.waker);
            if s.is_done() {
                st.streams.remove(&id);
            }
        } else if let Some(oldest) = s.outbox.pop_front() {
            s.outbox_bytes -= oldest.json.len();
            st.buffered -= oldest.json.len();
            tracing::warn!(parent: span, stream = id, "no reader on the standalone stream and the session's buffer is full: oldest message dropped");
        }
    }
}

/// Ends the reader of `stream`, if it has one: `Some(waker to wake)`. What it had not read
/// stays in the event store, so the client can resume.
pub(crate) fn disconnect(st: &mut State, stream: u64) -> Option<Option<Waker>> {
    let s = st.streams.get_mut(&stream)?;
    let conn = s.conn.take()?;
    s.clear_outbox(&mut st.buffered);
    st.attached -= 1;
    Some(conn.waker)
}

/// Writes `message` as one SSE event, with the id `<stream>_<index>` when events are kept.
pub(crate) fn frame(out: &mut BytesMut, stream: u64, index: u64, message: &[u8], with_id: bool) {
    let Ok(data) = std::str::from_utf8(message) else {
        tracing::error!(
            "an outgoing message is not UTF-8; it was encoded by serde_json, so this is a bug"
        );
        return;
    };
    let mut id_buf = [0u8; 48];
    let id = if with_id {
        let mut cursor = &mut id_buf[..];
        let _ = write!(cursor, "{stream}_{index}");
        let len = 48 - cursor.len();
        std::str::from_utf8(&id_buf[..len]).ok()
    } else {
        None
    };
    let event = EventRef {
        id,
        data,
        ..EventRef::default()
    };
    // Ids are digits and an underscore: nothing the encoder refuses.
    let _ = event.encode(out);
}

/// The priming event of a stream (S14): an id to resume from, the reconnection delay, no data.
pub(crate) fn priming(stream: u64, retry: Duration) -> Bytes {
    let mut out = BytesMut::new();
    let id = format!("{stream}_0");
    let event = EventRef {
        id: Some(&id),
        retry: Some(retry),
        ..EventRef::default()
    };
    let _ = event.encode(&mut out);
    out.freeze()
}

/// Why a JSON-response POST has no answer to give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonWait {
    /// The session ended first.
    Closed,
    /// The stream has another reader now: a GET with `Last-Event-ID` took it over, or it was
    /// shed for holding more than the session's budget (S22).
    Moved,
}

/// What a body does when its stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnEnd {
    /// Nothing: the session lives on.
    Keep,
    /// End the session (stateless mode: it lived for this POST).
    CloseSession,
    /// End the session, cancelling its request if unanswered (2026-07-28: it lived for this
    /// request, and closing its stream cancels it, M6).
    Cancel,
}

/// The SSE body of a POST or GET: first its prelude (priming event, comment, replayed events),
/// then the stream's messages as they come, with keep-alive comments when idle (S15).
pub(crate) struct SseBody {
    session: Arc<Session>,
    stream: u64,
    /// `None` once detached, or for a replay of a stream that is over.
    generation: Option<u64>,
    prelude: VecDeque<Bytes>,
    /// Entries up to this index were replayed from the store already.
    skip_through: Option<u64>,
    keep_alive: Option<(Duration, Pin<Box<Sleep>>)>,
    on_end: OnEnd,
    ended: bool,
}

impl fmt::Debug for SseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseBody")
            .field("stream", &self.stream)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl SseBody {
    pub(crate) fn new(
        session: Arc<Session>,
        stream: u64,
        generation: Option<u64>,
        on_end: OnEnd,
    ) -> Self {
        let keep_alive = session
            .shared
            .config
            .keep_alive
            .map(|every| (every, Box::pin(tokio::time::sleep(every))));
        SseBody {
            session,
            stream,
            generation,
            prelude: VecDeque::new(),
            skip_through: None,
            keep_alive,
            on_end,
            ended: false,
        }
    }

    pub(crate) fn push_prelude(&mut self, bytes: Bytes) {
        self.prelude.push_back(bytes);
    }

    pub(crate) fn skip_through(&mut self, index: u64) {
        self.skip_through = Some(index);
    }

    pub(crate) fn session(&self) -> &Arc<Session> {
        &self.session
    }

    pub(crate) fn stream_id(&self) -> u64 {
        self.stream
    }

    /// Takes up to `limit` bytes of what is queued for this body; `Ready(None)` when the body
    /// must end: its stream is over, it was replaced or shed, or the session ended.
    fn take(&mut self, cx: &mut Context<'_>, limit: usize) -> Poll<Option<Vec<Entry>>> {
        let Some(generation) = self.generation else {
            return Poll::Ready(None);
        };
        let mut guard = self.session.lock();
        let st = &mut *guard;
        // A closed session keeps only the streams it lets write what is queued (`flush`).
        let Some(s) = st.streams.get_mut(&self.stream) else {
            self.generation = None;
            return Poll::Ready(None);
        };
        if !s.is_read_by(generation) {
            // Replaced by a newer reader (S12), or shed for being too slow.
            self.generation = None;
            return Poll::Ready(None);
        }
        let mut taken = Vec::new();
        let mut bytes = 0;
        while bytes < limit {
            let Some(entry) = s.outbox.pop_front() else {
                break;
            };
            s.outbox_bytes -= entry.json.len();
            st.buffered -= entry.json.len();
            if self.skip_through.is_some_and(|k| entry.index <= k) {
                continue;
            }
            bytes += entry.json.len();
            taken.push(entry);
        }
        if s.finished && s.outbox.is_empty() {
            // Over: let go of the stream now, so that the next poll ends without the lock.
            st.streams.remove(&self.stream);
            st.attached -= 1;
            self.generation = None;
            return Poll::Ready((!taken.is_empty()).then_some(taken));
        }
        if !taken.is_empty() {
            return Poll::Ready(Some(taken));
        }
        let conn = s.conn.as_mut().expect("read by this body");
        if !conn.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            conn.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if let Some(bytes) = self.prelude.pop_front() {
            return Poll::Ready(Some(bytes));
        }
        let with_id = self.session.has_store();
        match self.take(cx, MAX_FRAME) {
            Poll::Ready(Some(entries)) => {
                let mut out =
                    BytesMut::with_capacity(entries.iter().map(|e| e.json.len() + 32).sum());
                for e in &entries {
                    frame(&mut out, self.stream, e.index, &e.json, with_id);
                }
                if let Some((every, sleep)) = &mut self.keep_alive {
                    sleep.as_mut().reset(Instant::now() + *every);
                }
                Poll::Ready(Some(out.freeze()))
            }
            Poll::Ready(None) => {
                self.end();
                Poll::Ready(None)
            }
            Poll::Pending => {
                if let Some((every, sleep)) = &mut self.keep_alive
                    && sleep.as_mut().poll(cx).is_ready()
                {
                    sleep.as_mut().reset(Instant::now() + *every);
                    return Poll::Ready(Some(Bytes::from_static(b": keep-alive\n\n")));
                }
                Poll::Pending
            }
        }
    }

    /// For a JSON-response POST (S4, S5): waits until either every response is queued with
    /// nothing else before it, giving the responses, or something other than a response is
    /// queued, giving `None`: the answer must then be SSE, and this body carries on as one.
    pub(crate) async fn wait_json(&mut self) -> Result<Option<Vec<Bytes>>, JsonWait> {
        std::future::poll_fn(|cx| {
            let Some(generation) = self.generation else {
                return Poll::Ready(Err(JsonWait::Moved));
            };
            let mut guard = self.session.lock();
            let st = &mut *guard;
            let Some(s) = st.streams.get_mut(&self.stream) else {
                self.generation = None;
                return Poll::Ready(Err(if st.closed {
                    JsonWait::Closed
                } else {
                    JsonWait::Moved
                }));
            };
            if !s.is_read_by(generation) {
                self.generation = None;
                return Poll::Ready(Err(JsonWait::Moved));
            }
            if s.outbox.iter().any(|e| !e.is_response) {
                return Poll::Ready(Ok(None));
            }
            if s.finished {
                // Every response, unless the session closed first.
                let complete = s.pending == 0;
                let responses = s.outbox.drain(..).map(|e| e.json).collect();
                st.buffered -= s.outbox_bytes;
                s.outbox_bytes = 0;
                st.streams.remove(&self.stream);
                st.attached -= 1;
                self.generation = None;
                return Poll::Ready(if complete {
                    Ok(Some(responses))
                } else {
                    Err(JsonWait::Closed)
                });
            }
            let conn = s.conn.as_mut().expect("read by this body");
            if !conn.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                conn.waker = Some(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.detach();
            self.session.touch();
            match self.on_end {
                OnEnd::Keep => {}
                OnEnd::CloseSession => self.session.close_detached(crate::session::Ending::Abort),
                OnEnd::Cancel => self.session.cancel_detached(),
            }
        }
    }

    /// Lets go of the stream: S13 for a request stream whose client went away.
    fn detach(&mut self) {
        let Some(generation) = self.generation.take() else {
            return;
        };
        let has_store = self.session.has_store();
        let mut guard = self.session.lock();
        let st = &mut *guard;
        if let Some(s) = st.streams.get_mut(&self.stream)
            && s.is_read_by(generation)
        {
            s.conn = None;
            st.attached -= 1;
            if !s.standalone {
                let dropped = s.clear_outbox(&mut st.buffered);
                if !has_store && (dropped > 0 || !s.finished) {
                    tracing::info!(parent: &self.session.span, stream = self.stream, dropped, "client closed a request's stream; with no event store, what it did not read is lost");
                }
            }
            if s.is_done() {
                st.streams.remove(&self.stream);
            }
        }
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        self.end();
    }
}
