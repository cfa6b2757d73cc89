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
    write_priming(&mut out, stream, retry);
    out.freeze()
}

/// Writes the priming event of `stream` (S14) to `out`.
fn write_priming(out: &mut BytesMut, stream: u64, retry: Duration) {
    let mut id_buf = [0u8; 24];
    let mut cursor = &mut id_buf[..];
    let _ = write!(cursor, "{stream}_0");
    let len = 24 - cursor.len();
    let event = EventRef {
        id: std::str::from_utf8(&id_buf[..len]).ok(),
        retry: Some(retry),
        ..EventRef::default()
    };
    let _ = event.encode(out);
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

/// Entries taken from a stream's outbox for one frame: most frames carry one message, which
/// needs no allocation of its own.
#[derive(Default)]
struct Taken {
    first: Option<Entry>,
    rest: Vec<Entry>,
    /// The bytes of their messages.
    bytes: usize,
}

impl Taken {
    fn push(&mut self, entry: Entry) {
        self.bytes += entry.json.len();
        match self.first {
            None => self.first = Some(entry),
            Some(_) => self.rest.push(entry),
        }
    }

    fn count(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }
}

/// The SSE body of a POST or GET: first its prelude (priming event, comment, replayed events),
/// then the stream's messages as they come, with keep-alive comments when idle (S15).
pub(crate) struct SseBody {
    session: Arc<Session>,
    stream: u64,
    /// `None` once detached, or for a replay of a stream that is over.
    generation: Option<u64>,
    prelude: VecDeque<Bytes>,
    /// The priming event's reconnection delay, while the event is still to open the first
    /// frame (S14).
    prime: Option<Duration>,
    /// A frame taken ahead of the first poll ([`SseBody::wait_first`]).
    early: Option<Bytes>,
    /// Entries up to this index were replayed from the store already.
    skip_through: Option<u64>,
    /// How often an idle body writes a comment (S15), and when the next is due; the timer is
    /// set up the first time the body waits, which a reply answered at once never does.
    keep_alive: Option<Duration>,
    due: Instant,
    timer: Option<Pin<Box<Sleep>>>,
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
        let keep_alive = session.shared.config.keep_alive;
        let due = keep_alive.map_or_else(Instant::now, |every| Instant::now() + every);
        SseBody {
            session,
            stream,
            generation,
            prelude: VecDeque::new(),
            prime: None,
            early: None,
            skip_through: None,
            keep_alive,
            due,
            timer: None,
            on_end,
            ended: false,
        }
    }

    pub(crate) fn push_prelude(&mut self, bytes: Bytes) {
        self.prelude.push_back(bytes);
    }

    /// Opens the stream with a priming event (S14) before its first message.
    pub(crate) fn prime(&mut self, retry: Duration) {
        self.prime = Some(retry);
    }

    pub(crate) fn skip_through(&mut self, index: u64) {
        self.skip_through = Some(index);
    }

    pub(crate) fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Takes up to `limit` bytes of what is queued for this body; `Ready(None)` when the body
    /// must end: its stream is over, it was replaced or shed, or the session ended.
    fn take(&mut self, cx: &mut Context<'_>, limit: usize) -> Poll<Option<Taken>> {
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
        let mut taken = Taken::default();
        while taken.bytes < limit {
            let Some(entry) = s.outbox.pop_front() else {
                break;
            };
            s.outbox_bytes -= entry.json.len();
            st.buffered -= entry.json.len();
            if self.skip_through.is_some_and(|k| entry.index <= k) {
                continue;
            }
            taken.push(entry);
        }
        if s.finished && s.outbox.is_empty() {
            // Over: let go of the stream now, so that the next poll ends without the lock.
            st.streams.remove(&self.stream);
            st.attached -= 1;
            self.generation = None;
            return Poll::Ready(taken.first.is_some().then_some(taken));
        }
        if taken.first.is_some() {
            return Poll::Ready(Some(taken));
        }
        let conn = s.conn.as_mut().expect("read by this body");
        if !conn.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            conn.waker = Some(cx.waker().clone());
        }
        Poll::Pending
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
                if let Some(every) = self.keep_alive {
                    self.due = Instant::now() + every;
                    if let Some(timer) = &mut self.timer {
                        timer.as_mut().reset(self.due);
                    }
                }
                Poll::Ready(frame)
            }
            Poll::Pending => {
                if let Some(retry) = self.prime.take() {
                    // Nothing to say yet: the priming event goes alone, for the client to have
                    // an id to resume from.
                    return Poll::Ready(Some(priming(self.stream, retry)));
                }
                let Some(every) = self.keep_alive else {
                    return Poll::Pending;
                };
                let due = self.due;
                let timer = self
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                if timer.as_mut().poll(cx).is_ready() {
                    self.due = Instant::now() + every;
                    timer.as_mut().reset(self.due);
                    return Poll::Ready(Some(Bytes::from_static(b": keep-alive\n\n")));
                }
                Poll::Pending
            }
        }
    }

    /// The stream's next frame: what is queued for this body, opened by the priming event if it
    /// is still to be written; `Ready(None)` once the body has ended.
    fn poll_live(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let with_id = self.session.has_store();
        match self.take(cx, MAX_FRAME) {
            Poll::Ready(Some(taken)) => {
                let overhead = 32 * taken.count() + if self.prime.is_some() { 48 } else { 0 };
                let mut out = BytesMut::with_capacity(taken.bytes + overhead);
                if let Some(retry) = self.prime.take() {
                    write_priming(&mut out, self.stream, retry);
                }
                for e in taken.first.iter().chain(&taken.rest) {
                    frame(&mut out, self.stream, e.index, &e.json, with_id);
                }
                Poll::Ready(Some(out.freeze()))
            }
            Poll::Ready(None) => {
                self.end();
                match self.prime.take() {
                    Some(retry) => Poll::Ready(Some(priming(self.stream, retry))),
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
