//! How a session ends: closed by the client, the application, the idle reaper, eviction or
//! shutdown; cancelled when the one request it served is abandoned (M6).

use std::sync::Arc;
use std::task::Waker;

use mcp_transport::Received;

use crate::core::cluster::{Fence, NotHolder};
use crate::core::session::state::{Delivery, State};
use crate::core::session::{Ending, Session};
use crate::core::store::event_store::StoreError;

impl Session {
    /// Ends the session: the application's `recv` ends, later sends fail, and the streams end,
    /// at once or once they have written what is queued (`ending`). Returns whether this call
    /// ended it.
    pub(crate) fn close_now(&self, ending: Ending) -> bool {
        let wakers: Vec<Waker> = {
            let mut guard = self.lock();
            let State {
                closed,
                incoming,
                inflight,
                streams,
                buffered,
                ..
            } = &mut *guard;
            if *closed {
                return false;
            }
            *closed = true;
            *incoming = None;
            inflight.clear();
            let mut wakers = Vec::new();
            streams.retain(|_, s| {
                if ending == Ending::Flush && s.flush() {
                    return true;
                }
                s.outbox.clear(buffered);
                if let Some(waker) = s.detach_reader() {
                    wakers.extend(waker);
                }
                false
            });
            wakers
        };
        for waker in wakers {
            waker.wake();
        }
        #[cfg(feature = "otel")]
        {
            self.operations.unanswered();
            if let Some(life) = &self.life {
                let version = self.lock().version;
                life.end(version.as_str());
            }
        }
        tracing::debug!(parent: &self.span, "session closed");
        true
    }

    /// Ends the session and forgets it everywhere: the sessions and the event store.
    pub(crate) async fn close(self: &Arc<Self>, ending: Ending) {
        if self.close_now(ending) {
            self.forget().await;
        }
    }

    pub(crate) async fn forget(&self) {
        self.shared.sessions.remove(self);
        if self.is_transient() {
            return;
        }
        if self.store.is_some() {
            // What was sent before the close is still being stored: wait for it, so that
            // nothing is stored after the session's records are gone.
            let watermark = self.lock().store_queue.queued();
            self.store_caught_up(watermark).await;
        }
        match (&self.shared.config.cluster, self.fence()) {
            // One fenced step: a copy whose session another node holds removes nothing (N8).
            (Some(cluster), Some(fence)) => cluster.end(&self.id, fence).await,
            _ => {
                if let Some(store) = &self.shared.config.session_store {
                    store.remove(&self.id).await;
                }
                if let Some(store) = &self.store {
                    store.close(&self.id).await;
                }
            }
        }
    }

    /// Ends the session on this node only (a node of a cluster shutting down): what was sent is
    /// stored, the shared records stay, and the holding goes, so that the next request of the
    /// session takes it over on another node at once (N5).
    pub(crate) async fn hand_over(self: &Arc<Self>) {
        if !self.close_now(Ending::Flush) {
            return;
        }
        self.shared.sessions.remove(self);
        let watermark = self.lock().store_queue.queued();
        self.store_caught_up(watermark).await;
        if let (Some(cluster), Some(fence)) = (&self.shared.config.cluster, self.fence()) {
            cluster.hand_over(&self.id, fence).await;
        }
        tracing::debug!(parent: &self.span, "session handed over");
    }

    /// Another node holds the session now (the store said [`NotHolder`], or this node's lease
    /// lapsed and another node claimed the session first): this node's copy ends, its streams
    /// with it, and the shared records stay the holder's (N8). Clients reading here resume
    /// through the holder.
    ///
    /// [`NotHolder`]: crate::NotHolder
    /// Whether `err`, a shared store's answer to a call made under `sent`, says another node
    /// holds the session now (N8); if so, and this copy still holds under `sent` (it was not
    /// claimed again meanwhile, N1), it ends.
    pub(crate) fn refused(&self, err: &StoreError, sent: Option<Fence>) -> bool {
        if err.downcast_ref::<NotHolder>().is_none() {
            return false;
        }
        if self.fence() == sent {
            self.step_down();
        }
        true
    }

    pub(crate) fn step_down(&self) {
        #[cfg(feature = "otel")]
        self.ends_by(crate::core::telemetry::EndCause::TakenOver);
        if self.close_now(Ending::Abort) {
            self.shared.sessions.remove(self);
            tracing::warn!(parent: &self.span, session_id = %self.id, "this node no longer holds the session: its copy here ended");
        }
    }

    /// Ends the session from a context that cannot wait (a drop): the store is told on a task.
    pub(crate) fn close_detached(self: &Arc<Self>, ending: Ending) {
        if !self.close_now(ending) {
            return;
        }
        self.shared.sessions.remove(self);
        let stored = self.has_store()
            || self.shared.config.session_store.is_some()
            || self.shared.config.cluster.is_some();
        if stored
            && !self.is_transient()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let session = Arc::clone(self);
            handle.spawn(async move { session.forget().await });
        }
    }

    /// M6: the client closed the stream of a per-request session. The application reads a
    /// `notifications/cancelled` for each request still unanswered, then the end of the
    /// connection; whatever it sends from now on fails.
    pub(crate) fn cancel_detached(self: &Arc<Self>) {
        let cancelled = {
            let st = self.lock();
            if let Some(incoming) = st.incoming.as_ref().filter(|_| !st.closed) {
                for id in st.inflight.keys() {
                    let params = serde_json::json!({
                        "requestId": id,
                        "reason": "the client closed the request's stream",
                    });
                    let cancelled = mcp_jsonrpc::Notification::new(
                        "notifications/cancelled",
                        mcp_jsonrpc::to_raw_value(&params).ok(),
                    );
                    // The channel holds the request at most: there is room.
                    if incoming
                        .try_send(Box::new(Delivery {
                            received: Received::new(cancelled.into()),
                            charge: None,
                        }))
                        .is_err()
                    {
                        tracing::debug!(parent: &self.span, %id, "could not tell the application of the cancellation: it stopped reading");
                    }
                }
            }
            !st.closed && !st.inflight.is_empty()
        };
        if cancelled {
            tracing::debug!(parent: &self.span, "request cancelled: the client closed its stream");
        }
        self.close_detached(Ending::Abort);
    }
}
