//! The ordered writer of a session's event store: what a send queues under the session's lock,
//! written in order by one writer at a time, never awaited while the lock is held.
//!
//! A send queues its message and, if no writer is at work, becomes the writer: it writes what
//! is queued (its own message and any that others queue meanwhile) until the queue is empty.
//! The order of the store is the order of the queue, which is the order of the sends; with a
//! remote store, a session's messages do not wait one round trip each behind a lock. Whoever
//! needs the store to have caught up (a resumption, the session's end) waits for a watermark.

use std::sync::Arc;

use crate::core::session::Session;
use crate::core::state::StoreOp;

impl Session {
    /// Writes the queue to the store until it is empty: called by the send that became the
    /// writer. If this future is dropped midway, a task takes the turn over, so that nothing
    /// queued is left behind and the order holds.
    pub(crate) async fn write_store(self: &Arc<Session>) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let mut turn = Turn(Some(Arc::clone(self)));
        loop {
            let Some(op) = self.lock().store_queue.next() else {
                turn.0 = None;
                return;
            };
            match op {
                StoreOp::Append {
                    stream,
                    index,
                    json,
                } => {
                    if let Err(err) = store.append(&self.id, stream, index, json).await {
                        tracing::error!(parent: &self.span, error = %err, stream, index, "event store append failed");
                    }
                }
                StoreOp::Finished { stream } => store.stream_finished(&self.id, stream).await,
                StoreOp::Opened { stream } => store.stream_opened(&self.id, stream).await,
            }
            self.lock().store_queue.written_one();
            self.store_progress.notify_waiters();
        }
    }

    /// Waits until the store has everything queued up to `watermark`.
    pub(crate) async fn store_caught_up(&self, watermark: u64) {
        loop {
            let progress = self.store_progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            if self.lock().store_queue.has_written(watermark) {
                return;
            }
            progress.await;
        }
    }
}

/// The writer's turn: handed to a task if the writer's future is dropped before the queue is
/// empty. The write in progress then may or may not have reached the store; it counts as made.
struct Turn(Option<Arc<Session>>);

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(session) = self.0.take() else {
            return;
        };
        session.lock().store_queue.written_one();
        session.store_progress.notify_waiters();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move { session.write_store().await });
            }
            Err(_) => {
                // Nothing can write the rest: let it go rather than hold it, and wake waiters.
                session.lock().store_queue.abandon();
                session.store_progress.notify_waiters();
                tracing::error!(parent: &session.span, "a store writer was dropped outside the runtime: what it had queued is not stored");
            }
        }
    }
}
