//! The reader of one stream: what an HTTP response body takes its messages from.
//!
//! A reader is attached to its stream under a generation; a newer reader of the same stream
//! (S12), or the session shedding a reader too far behind (S22), ends it. Dropping it lets go
//! of the stream (S13) and ends a session that lived for the stream.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;

use crate::core::session::state::Entry;
use crate::core::session::{Ending, Lifetime, Session};

/// Why a JSON-response POST has no answer to give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonWait {
    /// The session ended first.
    Closed,
    /// The stream has another reader now: a GET with `Last-Event-ID` took it over, or it was
    /// shed for holding more than the session's budget (S22).
    Moved,
}

/// Entries taken from a stream's outbox for one frame: most frames carry one message, which
/// needs no allocation of its own.
#[derive(Default)]
pub(crate) struct Taken {
    first: Option<Entry>,
    rest: Vec<Entry>,
    /// The bytes of their messages.
    pub(crate) bytes: usize,
}

impl Taken {
    fn push(&mut self, entry: Entry) {
        self.bytes += entry.json.len();
        match self.first {
            None => self.first = Some(entry),
            Some(_) => self.rest.push(entry),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.first.iter().chain(&self.rest)
    }

    /// Their messages, in order.
    pub(crate) fn into_messages(self) -> impl Iterator<Item = Bytes> {
        self.first.into_iter().chain(self.rest).map(|e| e.json)
    }
}

pub(crate) struct Reader {
    session: Arc<Session>,
    stream: u64,
    /// `None` once detached, or for a replay of a stream that is over.
    generation: Option<u64>,
    /// Entries up to this index were replayed from the store already.
    skip_through: Option<u64>,
    ended: bool,
}

impl Reader {
    pub(crate) fn new(session: Arc<Session>, stream: u64, generation: Option<u64>) -> Self {
        Reader {
            session,
            stream,
            generation,
            skip_through: None,
            ended: false,
        }
    }

    pub(crate) fn session(&self) -> &Arc<Session> {
        &self.session
    }

    pub(crate) fn stream(&self) -> u64 {
        self.stream
    }

    pub(crate) fn skip_through(&mut self, index: u64) {
        self.skip_through = Some(index);
    }

    /// Takes up to `limit` bytes of what is queued for this reader; `Ready(None)` when it must
    /// end: its stream is over, it was replaced or shed, or the session ended.
    pub(crate) fn poll_take(&mut self, cx: &mut Context<'_>, limit: usize) -> Poll<Option<Taken>> {
        let Some(generation) = self.generation else {
            return Poll::Ready(None);
        };
        let mut guard = self.session.lock();
        let st = &mut *guard;
        let held = self.session.is_held(st);
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
        if !held {
            // N8: nothing leaves a node that cannot prove its lease; woken when it can again.
            s.register(cx);
            return Poll::Pending;
        }
        let mut taken = Taken::default();
        while taken.bytes < limit {
            let Some(entry) = s.outbox.pop(&mut st.buffered) else {
                break;
            };
            if self.skip_through.is_some_and(|k| entry.index <= k) {
                continue;
            }
            taken.push(entry);
        }
        // With a store, what is taken goes out with event ids: the client can resume from it.
        s.id_given |= taken.first.is_some() && self.session.has_store();
        if s.finished && s.outbox.is_empty() {
            // Over: let go of the stream now, so that the next poll ends without the lock.
            st.streams.remove(&self.stream);
            self.generation = None;
            return Poll::Ready(taken.first.is_some().then_some(taken));
        }
        if taken.first.is_some() {
            return Poll::Ready(Some(taken));
        }
        s.register(cx);
        Poll::Pending
    }

    /// For a JSON-response POST (S4, S5): ready when either every response is queued with
    /// nothing else before it, giving the responses, or something other than a response is
    /// queued, giving `None`: the answer must then be SSE, and this reader carries on as one.
    pub(crate) fn poll_json(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Taken>, JsonWait>> {
        let Some(generation) = self.generation else {
            return Poll::Ready(Err(JsonWait::Moved));
        };
        let mut guard = self.session.lock();
        let st = &mut *guard;
        let held = self.session.is_held(st);
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
        if !held {
            s.register(cx);
            return Poll::Pending;
        }
        if s.outbox.iter().any(|e| !e.is_response) {
            return Poll::Ready(Ok(None));
        }
        if !s.finished {
            s.register(cx);
            return Poll::Pending;
        }
        // Every response, unless the session closed first.
        let complete = s.pending == 0;
        let mut responses = Taken::default();
        while let Some(entry) = s.outbox.pop(&mut st.buffered) {
            responses.push(entry);
        }
        st.streams.remove(&self.stream);
        self.generation = None;
        Poll::Ready(if complete {
            Ok(Some(responses))
        } else {
            Err(JsonWait::Closed)
        })
    }

    pub(crate) async fn wait_json(&mut self) -> Result<Option<Taken>, JsonWait> {
        std::future::poll_fn(|cx| self.poll_json(cx)).await
    }

    /// Ends the reader: lets go of its stream, and ends a session that lived for this stream
    /// (stateless, S20), cancelling its request if unanswered (per-request, M6). Idempotent.
    pub(crate) fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.detach();
        self.session.touch();
        match self.session.lifetime() {
            Lifetime::Session => {}
            Lifetime::Post => self.session.close_detached(Ending::Abort),
            Lifetime::Request(_) => self.session.cancel_detached(),
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
            s.detach_reader();
            if !s.standalone {
                let dropped = s.outbox.clear(&mut st.buffered);
                if !has_store && (dropped > 0 || !s.finished) {
                    tracing::info!(parent: &self.session.span, session_id = %self.session.id, stream = self.stream, dropped, "client closed a request's stream; with no event store, what it did not read is lost");
                }
            }
            if s.is_done() {
                st.streams.remove(&self.stream);
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.end();
    }
}
