//! Queueing an outgoing message for its stream's reader, and keeping the session within its
//! budget of buffered bytes (S22).

use std::task::Waker;

use crate::core::session::Session;
use crate::core::state::{Entry, State};

impl State {
    /// Queues `entry` on `stream` for its reader, then keeps the session within its budget
    /// (S22). The readers to wake are added to `wakers`, to be woken once the lock is released.
    pub(crate) fn queue(
        &mut self,
        session: &Session,
        stream: u64,
        entry: Entry,
        completes: bool,
        wakers: &mut Vec<Waker>,
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
        self.shed(
            session.ctx.config.max_buffered_bytes,
            has_store,
            span,
            wakers,
        );
    }

    /// While the session holds more than its budget, sheds the largest backlog: a reader that
    /// far behind is disconnected (it resumes from the event store if there is one), and the
    /// standalone stream with no reader loses its oldest messages. The message a connected
    /// reader is about to write is no backlog, so the bound is the budget plus one message per
    /// connected reader.
    fn shed(
        &mut self,
        budget: usize,
        has_store: bool,
        span: &tracing::Span,
        wakers: &mut Vec<Waker>,
    ) {
        while self.buffered.get() > budget {
            let Some((&id, s)) = self
                .streams
                .iter_mut()
                .filter(|(_, s)| s.backlog() > 0)
                .max_by_key(|(_, s)| s.backlog())
            else {
                return;
            };
            if let Some(waker) = s.detach_reader() {
                let dropped = s.outbox.clear(&mut self.buffered);
                if has_store {
                    tracing::debug!(parent: span, stream = id, "reader too far behind: disconnected, it can resume from the event store");
                } else {
                    tracing::warn!(parent: span, stream = id, dropped, "reader too far behind: disconnected, and its unread messages dropped (no event store)");
                }
                wakers.extend(waker);
                if s.is_done() {
                    self.streams.remove(&id);
                }
            } else if s.outbox.pop(&mut self.buffered).is_some() {
                tracing::warn!(parent: span, stream = id, "no reader on the standalone stream and the session's buffer is full: oldest message dropped");
            }
        }
    }
}
