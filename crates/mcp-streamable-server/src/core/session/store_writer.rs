//! The ordered writer of a session's event store: never awaited while the session's lock is
//! held, and never by a send.
//!
//! A send hands its writes to the session's [`StoreQueue`] under the lock, and, when no writer
//! is at work, becomes the writer: its first write starts at once, and if the store must be
//! waited for (a remote one), the writer goes on in a task of its own, taking everything
//! queued meanwhile in one write, until there is nothing left. The order of the store is the
//! order of the sends; the application's send never waits for a round trip, unless the store
//! has fallen more than the session's buffer behind. Whoever needs the store to have caught up
//! (a resumption, the session's end) waits for a watermark.
//!
//! [`StoreQueue`]: crate::core::session::state::StoreQueue

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Waker};

use crate::core::session::Session;
use crate::core::session::state::Batch;
use crate::core::store::event_store::{EventStore, Write};

impl Session {
    /// Makes `batch`, then what is queued, as the writer: starts at once, and goes on in a task
    /// if the store keeps it waiting.
    pub(crate) fn write_behind(self: &Arc<Session>, batch: Batch) {
        let mut writing = Box::pin(Arc::clone(self).write_store(batch));
        let mut cx = Context::from_waker(Waker::noop());
        if writing.as_mut().poll(&mut cx).is_pending() {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn(writing);
                }
                // Dropped here, the writer hands its turn on as it can (`Writer`'s drop).
                Err(_) => drop(writing),
            }
        }
    }

    /// Writes `batch`, then what is queued, a batch at a time, until nothing is: called by the
    /// send that became the writer. If this future is dropped midway, a task takes the turn
    /// over, so that nothing is left behind and the order holds.
    pub(crate) async fn write_store(self: Arc<Session>, batch: Batch) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let mut writer = Writer {
            session: &self,
            in_flight: 0,
            active: true,
        };
        let mut turn = Turn::Own(batch);
        loop {
            let writes = turn.writes();
            let made = writes.len() as u64;
            if !writes.is_empty() {
                writer.in_flight = made;
                write(&*store, &self, writes).await;
                writer.in_flight = 0;
            }
            let (next, watched) = {
                let mut st = self.lock();
                let next = st.store_queue.next(made);
                (next, st.store_queue.is_watched())
            };
            if watched {
                self.store_progress.notify_waiters();
            }
            let Some(next) = next else {
                writer.active = false;
                return;
            };
            turn = Turn::Queued(next);
        }
    }

    /// Waits until the store has everything handed over up to `watermark`.
    pub(crate) async fn store_caught_up(&self, watermark: u64) {
        let mut watching = Watching(None);
        loop {
            let progress = self.store_progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            {
                let mut st = self.lock();
                if st.store_queue.has_written(watermark) {
                    return;
                }
                if watching.0.is_none() {
                    st.store_queue.watch();
                    watching.0 = Some(self);
                }
            }
            progress.await;
        }
    }
}

/// The writes of one turn of the writer: its own send's, or everything queued behind it.
enum Turn {
    Own(Batch),
    Queued(Vec<Write>),
}

impl Turn {
    fn writes(&self) -> &[Write] {
        match self {
            Turn::Own(batch) => batch.as_slice(),
            Turn::Queued(writes) => writes,
        }
    }
}

/// Makes `writes` with the session's fence. A write refused because another node holds the
/// session now ends this node's copy (N8); any other failure is logged: what was not kept
/// cannot be resumed, and the client of a live stream got it all the same.
async fn write(store: &dyn EventStore, session: &Session, writes: &[Write]) {
    let fence = session.lock().fence;
    match store.write(&session.id, fence, writes).await {
        Ok(()) => {}
        Err(err) if session.refused(&err, fence) => {}
        Err(err) => {
            tracing::error!(parent: &session.span, session_id = %session.id, error = %err, writes = writes.len(), "event store write failed: what it held cannot be resumed");
        }
    }
}

/// A waiter on the store's progress, counted while it waits.
struct Watching<'a>(Option<&'a Session>);

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        if let Some(session) = self.0 {
            session.lock().store_queue.unwatch();
        }
    }
}

/// The writer's turn: handed to a task if the writer's future is dropped before it is over.
/// The writes in progress then may or may not have reached the store; they count as made.
struct Writer<'a> {
    session: &'a Arc<Session>,
    in_flight: u64,
    active: bool,
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        let session = Arc::clone(self.session);
        {
            let mut st = session.lock();
            st.store_queue.hand_back(self.in_flight, std::iter::empty());
            if tokio::runtime::Handle::try_current().is_err() {
                // Nothing can write the rest: let it go rather than hold it.
                st.store_queue.abandon();
            }
        }
        session.store_progress.notify_waiters();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(session.write_store(Batch::empty()));
            }
            Err(_) => {
                tracing::error!(parent: &session.span, session_id = %session.id, "a store writer was dropped outside the runtime: what it had queued is not stored");
            }
        }
    }
}
