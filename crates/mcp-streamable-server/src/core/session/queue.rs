//! Queueing an outgoing message for its stream's reader, and keeping the session within its
//! budget of buffered bytes (S22).
use bytes::Bytes;
use mcp_jsonrpc::{ErrorObject, Message, Response, code};

use crate::core::session::Session;
use crate::core::session::state::{Entry, State, Wakers};

/// What the client reads instead of an answer dropped for want of buffer (S22).
const DROPPED_ANSWER: &str = "answer dropped: the client read slower than the server \
     answered, past max_buffered_bytes, with no event id to resume from";

/// The stand-in of an unread response shed from a request stream: an error response with the
/// same id. Any other message has none (it is dropped).
fn dropped_answer(entry: &Entry) -> Option<Bytes> {
    if !entry.is_response {
        return None;
    }
    let id = match mcp_jsonrpc::parse(&entry.json) {
        Ok(mcp_jsonrpc::Body::Single(Message::Response(r))) => r.id().cloned(),
        _ => None,
    };
    let error = ErrorObject::new(code::INTERNAL_ERROR, DROPPED_ANSWER);
    Some(Bytes::from(
        Message::from(Response::error(id, error)).to_vec(),
    ))
}

impl State {
    /// Queues `entry` on `stream` for its reader, then keeps the session within its budget
    /// (S22). The readers to wake are added to `wakers`, to be woken once the lock is released.
    pub(crate) fn queue(
        &mut self,
        session: &Session,
        stream: u64,
        entry: Entry,
        completes: bool,
        wakers: &mut Wakers,
    ) {
        let has_store = session.has_store();
        let span = &session.span;
        let Some(s) = self.streams.get_mut(&stream) else {
            // The session closed meanwhile.
            return;
        };
        if completes {
            s.finished = true;
        }
        if s.is_read() || s.standalone {
            s.outbox.push(entry, &mut self.buffered);
            wakers.extend(s.take_waker());
        } else if !has_store {
            // S13: the client closed this POST's connection and nothing keeps messages to
            // resume from.
            tracing::debug!(parent: span, stream, "no connection reads this stream and there is no event store: message dropped");
        }
        if s.is_done() {
            self.streams.remove(&stream);
        }
        self.shed(session.shared.config.max_buffered_bytes, session, wakers);
        // Past the server-wide budget, a session over its share sheds its own now; if that is
        // not enough, the largest sessions shed theirs (the reaper's task: their locks are not
        // taken under this one's).
        let budget = &session.shared.budget;
        if budget.is_over() {
            let share = budget.share(session.shared.sessions.len());
            if self.buffered.get() > share {
                self.shed(share, session, wakers);
            }
            if budget.is_over() {
                budget.wake_shedder();
            }
        }
    }

    /// While the session holds more than its budget, sheds the largest backlog: a reader that
    /// far behind is disconnected (it resumes from the event store if there is one), and the
    /// standalone stream with no reader loses its oldest messages. The message a connected
    /// reader is about to write is no backlog, so the bound is the budget plus one message per
    /// connected reader.
    ///
    /// A request stream's reader whose client could not resume (no store, or no event id of the
    /// stream given out yet: a 2025-03-26 stream is not primed) is first kept and its backlog
    /// shrunk: each unread answer becomes a JSON-RPC error that says it was dropped, other
    /// messages go. Its client then sees every request of the stream answered, if with errors,
    /// where a disconnection would end the stream cleanly with the answers out of its reach
    /// (nothing lost silently); it is disconnected only if that frees nothing.
    fn shed(&mut self, budget: usize, session: &Session, wakers: &mut Wakers) {
        while self.buffered.get() > budget {
            // Read only once shedding: a send that sheds nothing does no more than before.
            let (has_store, span) = (session.has_store(), &session.span);
            #[cfg(feature = "otel")]
            let held = self.buffered.get();
            let Some((&id, s)) = self
                .streams
                .iter_mut()
                .filter(|(_, s)| s.backlog() > 0)
                .max_by_key(|(_, s)| s.backlog())
            else {
                return;
            };
            'turn: {
                // A request stream's reader is disconnected only when its client can resume.
                let resumable = has_store && s.id_given;
                if !resumable && !s.standalone && s.is_read() {
                    let before = s.backlog();
                    let dropped = s.outbox.shrink_backlog(&mut self.buffered, dropped_answer);
                    if s.backlog() < before {
                        tracing::warn!(parent: span, session_id = %session.id, stream = id, dropped, "reader too far behind and no event store: its unread answers replaced by errors, its other unread messages dropped");
                        break 'turn;
                    }
                }
                if let Some(waker) = s.detach_reader() {
                    let dropped = s.outbox.clear(&mut self.buffered);
                    if has_store {
                        tracing::debug!(parent: span, stream = id, "reader too far behind: disconnected, it can resume from the event store");
                    } else {
                        tracing::warn!(parent: span, session_id = %session.id, stream = id, dropped, "reader too far behind: disconnected, and its unread messages dropped (no event store)");
                    }
                    wakers.extend(waker);
                    if s.is_done() {
                        self.streams.remove(&id);
                    }
                } else if s.outbox.pop(&mut self.buffered).is_some() {
                    tracing::warn!(parent: span, session_id = %session.id, stream = id, "no reader on the standalone stream and the session's buffer is full: oldest message dropped");
                }
            }
            #[cfg(feature = "otel")]
            session
                .shared
                .telemetry
                .shed(held.saturating_sub(self.buffered.get()));
        }
    }
}

impl Session {
    /// Sheds this session's largest backlogs until it holds at most `bytes` (S22).
    pub(crate) fn shed_to(&self, bytes: usize) {
        let mut wakers = Wakers::default();
        self.lock().shed(bytes, self, &mut wakers);
        wakers.wake();
    }
}
