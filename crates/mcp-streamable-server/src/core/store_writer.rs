//! The ordered writer of a session's event store: never awaited while the session's lock is
//! held.
//!
//! A send hands its writes to the session's [`StoreQueue`] under the lock, and, when no writer
//! is at work, becomes the writer: it writes its own, then whatever others queued meanwhile,
//! until there is nothing left. The order of the store is the order of the sends; with a
//! remote store, a session's messages do not wait one round trip each behind a lock. Whoever
//! needs the store to have caught up (a resumption, the session's end) waits for a watermark.
//!
//! [`StoreQueue`]: crate::core::state::StoreQueue

use std::sync::Arc;

use crate::core::cluster::NotHolder;
use crate::core::event_store::EventStore;
use crate::core::session::Session;
use crate::core::state::{Batch, StoreOp};

impl Session {
    /// Writes `batch`, then what is queued, until nothing is: called by the send that became
    /// the writer. If this future is dropped midway, a task takes the turn over, so that
    /// nothing is left behind and the order holds.
    pub(crate) async fn write_store(self: &Arc<Session>, batch: Batch) {
        let Some(store) = &self.store else {
            return;
        };
        let mut writer = Writer {
            session: self,
            own: Some(batch.into_iter()),
            made: 0,
            active: true,
        };
        loop {
            let op = match writer.own.as_mut().and_then(Iterator::next) {
                Some(op) => op,
                None => {
                    let (next, watched) = {
                        let mut st = self.lock();
                        let next = st.store_queue.next(std::mem::take(&mut writer.made));
                        (next, st.store_queue.is_watched())
                    };
                    if watched {
                        self.store_progress.notify_waiters();
                    }
                    let Some(op) = next else {
                        writer.active = false;
                        return;
                    };
                    op
                }
            };
            write(&**store, self, op).await;
            writer.made += 1;
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

async fn write(store: &dyn EventStore, session: &Session, op: StoreOp) {
    // Nodes following the stream from the store learn of what they read: an event, or the
    // stream's end; a stream's opening gives them nothing to read.
    let readable = matches!(op, StoreOp::Append { .. } | StoreOp::Finished { .. });
    let stream = op.stream();
    write_op(store, session, op).await;
    if readable && let Some(cluster) = &session.ctx.config.cluster {
        cluster.written(&session.id, stream).await;
    }
}

async fn write_op(store: &dyn EventStore, session: &Session, op: StoreOp) {
    match op {
        StoreOp::Append {
            stream,
            index,
            json,
        } => match store.append(&session.id, stream, index, json).await {
            Ok(()) => {}
            Err(err) if err.downcast_ref::<NotHolder>().is_some() => session.step_down(),
            Err(err) => {
                tracing::error!(parent: &session.span, error = %err, stream, index, "event store append failed");
            }
        },
        StoreOp::Finished { stream } => store.stream_finished(&session.id, stream).await,
        StoreOp::Opened { stream } => store.stream_opened(&session.id, stream).await,
        StoreOp::Began { stream, requests } => {
            if let Err(err) = store.stream_began(&session.id, stream, &requests).await {
                tracing::error!(parent: &session.span, error = %err, stream, "event store: a stream's requests not recorded");
            }
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
/// The write in progress then may or may not have reached the store; it counts as made.
struct Writer<'a> {
    session: &'a Arc<Session>,
    own: Option<<Batch as IntoIterator>::IntoIter>,
    made: u64,
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
            let rest = self.own.take().into_iter().flatten();
            st.store_queue.hand_back(self.made + 1, rest);
            if tokio::runtime::Handle::try_current().is_err() {
                // Nothing can write the rest: let it go rather than hold it.
                st.store_queue.abandon();
            }
        }
        session.store_progress.notify_waiters();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move { session.write_store(Batch::empty()).await });
            }
            Err(_) => {
                tracing::error!(parent: &session.span, "a store writer was dropped outside the runtime: what it had queued is not stored");
            }
        }
    }
}
