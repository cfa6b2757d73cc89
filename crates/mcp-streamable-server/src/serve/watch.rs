//! What one connection's task watches: the requests in flight (for the idle timeout) and the
//! budget of requests abandoned before their response ended (against paced rapid resets), with
//! the signal that the connection must close.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The state of one connection, shared by its task and its requests.
#[derive(Debug)]
pub(crate) struct Watch {
    inflight: AtomicUsize,
    /// When the last request in flight ended (or the connection opened).
    idle_since: Mutex<Instant>,
    /// Whether the connection ever carried a request.
    used: AtomicBool,
    budget: Mutex<Budget>,
    /// Set when the peer abandoned more requests than its budget: the connection is to close.
    over_budget: AtomicBool,
    changed: Notify,
}

impl Watch {
    pub(crate) fn new(per_second: u32) -> Self {
        Watch {
            inflight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            used: AtomicBool::new(false),
            budget: Mutex::new(Budget::new(per_second)),
            over_budget: AtomicBool::new(false),
            changed: Notify::new(),
        }
    }

    /// Takes one abandoned request from the budget; when the peer has none left, marks the
    /// connection to close.
    fn abandoned(&self) {
        let allowed = self.budget.lock().unwrap().take(Instant::now());
        if !allowed && !self.over_budget.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "a peer abandons requests faster than its budget (HTTP/2 rapid reset?); \
                 closing its connection"
            );
            self.changed.notify_one();
        }
    }

    /// Whether the peer went over its budget.
    pub(crate) fn over_budget(&self) -> bool {
        self.over_budget.load(Ordering::Relaxed)
    }

    /// Whether the connection ever carried a request.
    pub(crate) fn used(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }

    /// Counts a request in flight until the token is dropped (with its response's body); a
    /// token dropped before [`Inflight::finish`] counts against the budget.
    pub(crate) fn begin(self: &std::sync::Arc<Self>) -> Inflight {
        self.used.store(true, Ordering::Relaxed);
        self.inflight.fetch_add(1, Ordering::Relaxed);
        Inflight {
            watch: std::sync::Arc::clone(self),
            finished: false,
            abandon: Abandon(std::sync::Arc::default()),
        }
    }

    /// When the connection went idle; `None` while a request is in flight.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let since = *self.idle_since.lock().unwrap();
        (self.inflight.load(Ordering::Relaxed) == 0).then_some(since)
    }

    /// Completes when the connection went over its budget (at most once).
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }
}

/// One request in flight on its connection: from the service's call to the end of the
/// response's body. Dropped unfinished, the peer abandoned it: it reset the stream (HTTP/2) or
/// closed the connection before the response ended.
#[derive(Debug)]
pub(crate) struct Inflight {
    watch: std::sync::Arc<Watch>,
    finished: bool,
    abandon: Abandon,
}

impl Inflight {
    /// The response was written to its end.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
    }

    /// A handle that records this request as abandoned (its body failed), once.
    pub(crate) fn abandon_handle(&self) -> (Abandon, std::sync::Arc<Watch>) {
        (self.abandon.clone(), std::sync::Arc::clone(&self.watch))
    }
}

/// Whether a request was counted as abandoned already: by its body, or by its token.
#[derive(Debug, Clone)]
pub(crate) struct Abandon(std::sync::Arc<AtomicBool>);

impl Abandon {
    /// Counts the request against `watch`'s budget, unless it was counted already.
    pub(crate) fn record(&self, watch: &Watch) {
        if !self.0.swap(true, Ordering::Relaxed) {
            watch.abandoned();
        }
    }
}

impl Drop for Inflight {
    fn drop(&mut self) {
        let watch = &self.watch;
        {
            let mut since = watch.idle_since.lock().unwrap();
            if watch.inflight.fetch_sub(1, Ordering::Relaxed) == 1 {
                *since = Instant::now();
            }
        }
        if !self.finished {
            self.abandon.record(watch);
        }
    }
}

/// A token bucket: `2 * rate` at once, refilled at `rate` a second.
#[derive(Debug)]
struct Budget {
    rate: f64,
    tokens: f64,
    at: Instant,
}

impl Budget {
    fn new(per_second: u32) -> Self {
        let rate = f64::from(per_second.max(1));
        Budget {
            rate,
            tokens: 2.0 * rate,
            at: Instant::now(),
        }
    }

    fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at);
        self.at = now;
        self.tokens = (self.tokens + elapsed.as_secs_f64() * self.rate).min(2.0 * self.rate);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return true;
        }
        false
    }
}

/// How long until `since + after`, from `now` (zero when past).
pub(crate) fn remaining(since: Instant, after: Duration, now: Instant) -> Duration {
    (since + after).saturating_duration_since(now)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_budget_allows_a_burst_then_the_rate() {
        let start = Instant::now();
        let mut budget = Budget::new(10);
        budget.at = start;
        assert!((0..20).all(|_| budget.take(start)));
        assert!(!budget.take(start));
        // A second later, ten more, and no more.
        let later = start + Duration::from_secs(1);
        assert!((0..10).all(|_| budget.take(later)));
        assert!(!budget.take(later));
    }

    #[tokio::test(start_paused = true)]
    async fn idle_is_counted_from_the_end_of_the_last_request() {
        let watch = Arc::new(Watch::new(10));
        assert!(watch.idle_since().is_some());
        let first = watch.begin();
        let second = watch.begin();
        assert_eq!(watch.idle_since(), None);
        drop(first);
        assert_eq!(watch.idle_since(), None);
        tokio::time::advance(Duration::from_secs(3)).await;
        drop(second);
        assert_eq!(watch.idle_since(), Some(Instant::now()));
    }

    #[test]
    fn abandoned_requests_past_the_budget_mark_the_connection() {
        let watch = Arc::new(Watch::new(1));
        let mut done = watch.begin();
        done.finish();
        drop(done);
        assert!(watch.used() && !watch.over_budget());
        // Two abandoned at once are the burst; the third is one too many.
        drop(watch.begin());
        drop(watch.begin());
        assert!(!watch.over_budget());
        drop(watch.begin());
        assert!(watch.over_budget());
    }
}
