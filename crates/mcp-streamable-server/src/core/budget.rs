//! The server-wide budgets (S22): of buffered outgoing bytes, what every session's outboxes
//! hold together, bounded by `Config::max_total_buffered_bytes`; and of incoming bytes, what
//! POSTs hold for applications that have not read them yet, bounded by
//! `Config::max_total_incoming_bytes`.
//!
//! Each session's [`Buffered`](crate::core::session::state::Buffered) count moves this sum with its
//! own, so it cannot drift from the messages it counts. Past the budget, a session that holds
//! more than its share sheds its own largest backlogs at once; if the total is still over, it
//! wakes the task that sheds the largest sessions' (`context.rs`), so that the largest
//! backlogs go first.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

pub(crate) struct Budget {
    total: AtomicUsize,
    max: usize,
    over: Notify,
}

impl Budget {
    pub(crate) fn new(max: usize) -> Self {
        Budget {
            total: AtomicUsize::new(0),
            max,
            over: Notify::new(),
        }
    }

    /// The bytes buffered by every session together.
    pub(crate) fn total(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, n: usize) {
        self.total.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sub(&self, n: usize) {
        self.total.fetch_sub(n, Ordering::Relaxed);
    }

    pub(crate) fn is_over(&self) -> bool {
        self.total() > self.max
    }

    /// What each of `sessions` may hold while the budget is exceeded.
    pub(crate) fn share(&self, sessions: usize) -> usize {
        self.max / sessions.max(1)
    }

    /// Asks the shedding task to shed the largest backlogs.
    pub(crate) fn wake_shedder(&self) {
        self.over.notify_one();
    }

    pub(crate) async fn exceeded(&self) {
        self.over.notified().await;
    }
}

/// The bytes of client messages not yet taken by their applications, in all sessions.
pub(crate) struct Inbound {
    total: AtomicUsize,
    max: usize,
}

impl Inbound {
    pub(crate) fn new(max: usize) -> Self {
        Inbound {
            total: AtomicUsize::new(0),
            max,
        }
    }

    pub(crate) fn total(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// Charges a POST's `bytes` until its messages are all taken (the [`Charge`] dropped);
    /// `None` when that would exceed the budget. A POST larger than the whole budget is still
    /// admitted when nothing else is held, so that the budget never refuses everything.
    pub(crate) fn charge(self: &Arc<Self>, bytes: usize) -> Option<Charge> {
        let admitted = self
            .total
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held == 0 || held + bytes <= self.max).then_some(held + bytes)
            })
            .is_ok();
        admitted.then(|| Charge {
            inbound: Arc::clone(self),
            bytes,
        })
    }
}

/// A POST's share of the incoming budget, given back when dropped. Its messages hold it in
/// shares ([`split_off`](Charge::split_off)), each given back as the application takes it.
pub(crate) struct Charge {
    inbound: Arc<Inbound>,
    bytes: usize,
}

impl Charge {
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Moves `bytes` of this charge (at most all of it) into a charge of its own.
    pub(crate) fn split_off(&mut self, bytes: usize) -> Charge {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Charge {
            inbound: Arc::clone(&self.inbound),
            bytes,
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.inbound.total.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}
