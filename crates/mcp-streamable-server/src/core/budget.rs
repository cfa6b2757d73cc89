//! The server-wide budget of buffered outgoing bytes (S22): what every session's outboxes hold
//! together, bounded by `Config::max_total_buffered_bytes`.
//!
//! Each session's [`Buffered`](crate::core::state::Buffered) count moves this sum with its
//! own, so it cannot drift from the messages it counts. Past the budget, a session that holds
//! more than its share sheds its own largest backlogs at once; one under its share wakes the
//! task that sheds the largest sessions' (`context.rs`), so that the largest backlogs go first.

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
