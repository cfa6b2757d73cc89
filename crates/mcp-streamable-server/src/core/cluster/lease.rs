//! A node's lease, as the node itself can prove it: which incarnation of the node it is, and
//! until when the shared records are sure to hold it alive.
//!
//! The backend renews the lease and says so ([`Lease::renewed`]); everything else only asks.
//! The lease is good until one lease period after the *sending* of the last renewal the
//! shared records acknowledged, by this process's monotonic clock: the records set their
//! expiry when the renewal reached them, later than it was sent, so a node never believes
//! itself alive after the records stopped doing so (their clocks ticking at the same rate).
//! A node that was paused, or could not reach the records, finds its lease gone by the clock
//! alone, at the first look after it resumes, before it learns anything else.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::core::store::fence::Fence;

/// A node's lease: its incarnation, and until when it may deliver to applications.
///
/// Cheap to clone; clones share the state. A [`Cluster`](crate::Cluster) keeps one and renews
/// it; the service asks [`holds`](Lease::holds) before it hands a client's message to an
/// application, and before a reader takes what an application sent.
///
/// ```
/// use std::time::{Duration, Instant};
/// use mcp_streamable_server::{Fence, Lease};
///
/// let lease = Lease::new();
/// assert!(!lease.is_valid(), "not valid until renewed");
/// lease.renewed(7, Instant::now(), Duration::from_millis(750));
/// assert!(lease.holds(Fence::new(7, 0)));
/// assert!(!lease.holds(Fence::new(6, 0)), "an earlier incarnation's holding is not held");
/// ```
#[derive(Clone)]
pub struct Lease {
    state: Arc<State>,
}

struct State {
    /// The zero of `until`.
    epoch: Instant,
    incarnation: AtomicU64,
    /// Nanoseconds after `epoch` until which the lease is good; 0 when it never was.
    until: AtomicU64,
    /// Woken when the lease becomes good again, is lapsed by its keeper ([`Lease::lapse`]; running
    /// out by the clock wakes nobody), or the incarnation changes; `changes` counts those, so
    /// that a waiter misses none.
    changed: Notify,
    changes: AtomicU64,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("incarnation", &self.incarnation())
            .field("valid", &self.is_valid())
            .finish()
    }
}

impl Default for Lease {
    fn default() -> Self {
        Lease::new()
    }
}

impl Lease {
    /// A lease not yet renewed: not valid, incarnation 0.
    pub fn new() -> Lease {
        Lease {
            state: Arc::new(State {
                epoch: Instant::now(),
                incarnation: AtomicU64::new(0),
                until: AtomicU64::new(0),
                changed: Notify::new(),
                changes: AtomicU64::new(0),
            }),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.state.epoch);
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX).max(1)
    }

    /// The shared records acknowledged a renewal of `incarnation`'s lease, for `period`,
    /// sent at `sent`. A new incarnation replaces the old one, whose holdings are no longer
    /// held; for the same one, the lease only ever grows.
    pub fn renewed(&self, incarnation: u64, sent: Instant, period: Duration) {
        let until = self.nanos(sent.checked_add(period).unwrap_or(sent));
        let state = &self.state;
        let was_valid = self.is_valid();
        let before = state.incarnation.swap(incarnation, Ordering::AcqRel);
        if before == incarnation {
            state.until.fetch_max(until, Ordering::AcqRel);
        } else {
            state.until.store(until, Ordering::Release);
        }
        if before != incarnation || !was_valid {
            state.changes.fetch_add(1, Ordering::AcqRel);
            state.changed.notify_waiters();
        }
    }

    /// The lease is gone now, whatever the clock says: the backend learnt that the records no
    /// longer hold this incarnation alive.
    pub fn lapse(&self) {
        let now = self.nanos(Instant::now());
        self.state.until.fetch_min(now, Ordering::AcqRel);
        self.state.changes.fetch_add(1, Ordering::AcqRel);
        self.state.changed.notify_waiters();
    }

    /// This node's incarnation: the one whose holdings it may act on. 0 before the first
    /// renewal.
    pub fn incarnation(&self) -> u64 {
        self.state.incarnation.load(Ordering::Acquire)
    }

    /// Whether the lease is good now.
    pub fn is_valid(&self) -> bool {
        let until = self.state.until.load(Ordering::Acquire);
        until != 0 && self.nanos(Instant::now()) < until
    }

    /// Whether this node may act on a session held under `fence`: the lease is good, and of
    /// the incarnation that holds it.
    pub fn holds(&self, fence: Fence) -> bool {
        fence.incarnation == self.incarnation() && self.is_valid()
    }

    /// Until when the lease is good, if it is now.
    pub fn until(&self) -> Option<Instant> {
        self.is_valid().then(|| self.ends()).flatten()
    }

    /// When the lease ends, or ended: `None` if it never was good.
    pub(crate) fn ends(&self) -> Option<Instant> {
        let until = self.state.until.load(Ordering::Acquire);
        (until != 0).then(|| self.state.epoch + Duration::from_nanos(until))
    }

    /// Waits until the lease becomes good again, is lapsed by its keeper, or changes
    /// incarnation, or `limit` passes (running out by the clock is not a change).
    pub async fn changed_within(&self, limit: Duration) {
        let seen = self.changes();
        let _ = tokio::time::timeout(limit, self.changed_after(seen)).await;
    }

    /// How many times the lease became good again, lapsed or changed incarnation.
    pub(crate) fn changes(&self) -> u64 {
        self.state.changes.load(Ordering::Acquire)
    }

    /// Waits until [`changes`](Self::changes) is past `seen`; returns it.
    pub(crate) async fn changed_after(&self, seen: u64) -> u64 {
        loop {
            let changed = self.state.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.changes();
            if now != seen {
                return now;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_good_from_its_renewal_for_its_period_and_for_its_incarnation() {
        let lease = Lease::new();
        assert!(!lease.is_valid());
        assert_eq!(lease.incarnation(), 0);
        let sent = Instant::now();
        lease.renewed(3, sent, Duration::from_secs(60));
        assert!(lease.is_valid());
        assert!(lease.holds(Fence::new(3, 9)));
        assert!(!lease.holds(Fence::new(2, 9)));
        // An older renewal of the same incarnation never shortens it.
        lease.renewed(3, sent - Duration::from_secs(30), Duration::from_secs(1));
        assert!(lease.is_valid());
        // A renewal sent long ago is over already: measured from when it was sent.
        let old = Lease::new();
        old.renewed(
            1,
            Instant::now() - Duration::from_secs(2),
            Duration::from_secs(1),
        );
        assert!(!old.is_valid());
        lease.lapse();
        assert!(!lease.is_valid());
        assert!(lease.until().is_none());
        // A new incarnation replaces the old one's lease outright.
        lease.renewed(4, Instant::now(), Duration::from_secs(60));
        assert!(lease.holds(Fence::new(4, 0)));
        assert!(!lease.holds(Fence::new(3, 9)));
    }

    #[tokio::test]
    async fn waiters_hear_of_a_lease_good_again_and_of_a_new_incarnation() {
        let lease = Lease::new();
        let waiting = tokio::spawn({
            let lease = lease.clone();
            async move { lease.changed_after(0).await }
        });
        tokio::task::yield_now().await;
        lease.renewed(1, Instant::now(), Duration::from_secs(60));
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .unwrap();
        // Renewing a good lease of the same incarnation is no news.
        let waiting = lease.changed_within(Duration::from_millis(50));
        lease.renewed(1, Instant::now(), Duration::from_secs(60));
        waiting.await;
    }
}
