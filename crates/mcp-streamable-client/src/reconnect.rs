//! How lost SSE streams are reconnected: delays, jitter and the retry budget (C4).

use std::time::Duration;

/// The delay before the first reconnection attempt, when the server gave no `retry`: 1 s, long
/// enough for a restarting server or a flapping proxy to come back, short enough that a caller
/// barely notices.
pub const DEFAULT_INITIAL_DELAY: Duration = Duration::from_secs(1);

/// How much each further attempt's delay grows: 1.5, gentler than doubling so that five
/// attempts span about 13 s rather than 31 s.
pub const DEFAULT_FACTOR: f64 = 1.5;

/// The longest delay between two attempts: 30 s, so that a long outage is still retried often
/// enough to be noticed when it ends.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(30);

/// How many attempts in a row may fail to make progress before a stream is given up: 5.
pub const DEFAULT_MAX_RETRIES: u32 = 5;

/// When and how often a lost SSE stream is reconnected.
///
/// A stream lost before its responses arrived is resumed with GET and `Last-Event-ID`; so is the
/// standalone GET stream. Before each attempt the transport waits the server's `retry` time if
/// the stream gave one (the specification requires it), else `initial_delay * factor^n`
/// capped at `max_delay`, with *equal jitter*: a random delay between half the computed
/// delay and all of it, so that clients disconnected together do not come back together, while
/// none comes back at once.
///
/// At most `max_retries` attempts in a row may fail to make progress. The budget is refilled
/// only when a reconnection made progress: it delivered a message or moved the last event id
/// on. A stream that is given up answers its waiting requests with errors (C5).
///
/// ```
/// use std::time::Duration;
/// use mcp_streamable_client::ReconnectPolicy;
///
/// let policy = ReconnectPolicy::default()
///     .initial_delay(Duration::from_millis(200))
///     .max_retries(10);
/// assert!(policy.delay(0) <= Duration::from_millis(200));
/// assert!(policy.delay(0) >= Duration::from_millis(100));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    initial_delay: Duration,
    factor: f64,
    max_delay: Duration,
    max_retries: u32,
    jitter: bool,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            initial_delay: DEFAULT_INITIAL_DELAY,
            factor: DEFAULT_FACTOR,
            max_delay: DEFAULT_MAX_DELAY,
            max_retries: DEFAULT_MAX_RETRIES,
            jitter: true,
        }
    }
}

impl ReconnectPolicy {
    /// A policy that never reconnects: a lost stream is given up at once.
    pub fn never() -> Self {
        ReconnectPolicy::default().max_retries(0)
    }

    /// Sets the delay before the first attempt ([`DEFAULT_INITIAL_DELAY`]).
    #[must_use]
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// Sets how much the delay grows with each attempt ([`DEFAULT_FACTOR`]); values below 1
    /// count as 1.
    #[must_use]
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = if factor.is_finite() {
            factor.max(1.0)
        } else {
            1.0
        };
        self
    }

    /// Sets the longest delay ([`DEFAULT_MAX_DELAY`]).
    #[must_use]
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Sets how many attempts in a row may fail to make progress ([`DEFAULT_MAX_RETRIES`]).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Turns jitter on (the default) or off.
    #[must_use]
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// The number of attempts in a row that may fail to make progress.
    pub fn retries(&self) -> u32 {
        self.max_retries
    }

    /// The delay before attempt `attempt` (counted from 0) when the server gave no `retry`,
    /// jitter included.
    pub fn delay(&self, attempt: u32) -> Duration {
        let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
        let secs = self.initial_delay.as_secs_f64() * self.factor.powi(exponent);
        let full = Duration::try_from_secs_f64(secs)
            .unwrap_or(self.max_delay)
            .min(self.max_delay);
        if !self.jitter {
            return full;
        }
        let half = full / 2;
        let spread = u64::try_from((full - half).as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(fastrand::u64(0..=spread))
    }
}

/// The attempts a stream has left; refilled when a connection made progress.
#[derive(Debug)]
pub(crate) struct Budget {
    used: u32,
    max: u32,
}

impl Budget {
    pub(crate) fn new(policy: &ReconnectPolicy) -> Self {
        Budget {
            used: 0,
            max: policy.max_retries,
        }
    }

    /// Spends one attempt, returning its number (from 0), or `None` when none is left.
    pub(crate) fn take(&mut self) -> Option<u32> {
        (self.used < self.max).then(|| {
            self.used += 1;
            self.used - 1
        })
    }

    /// A connection made progress: the next failure starts from a full budget.
    pub(crate) fn refill(&mut self) {
        self.used = 0;
    }

    /// The number of attempts a full budget holds.
    pub(crate) fn max(&self) -> u32 {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_by_the_factor_up_to_the_cap() {
        let policy = ReconnectPolicy::default().jitter(false);
        assert_eq!(policy.delay(0), Duration::from_secs(1));
        assert_eq!(policy.delay(1), Duration::from_millis(1500));
        assert_eq!(policy.delay(2), Duration::from_millis(2250));
        assert_eq!(policy.delay(20), DEFAULT_MAX_DELAY);
        assert_eq!(policy.delay(u32::MAX), DEFAULT_MAX_DELAY);
    }

    #[test]
    fn equal_jitter_stays_between_half_and_all_of_the_delay() {
        let policy = ReconnectPolicy::default();
        for attempt in 0..8 {
            let full = policy.clone().jitter(false).delay(attempt);
            for _ in 0..50 {
                let d = policy.delay(attempt);
                assert!(d >= full / 2 && d <= full, "{d:?} outside {full:?}");
            }
        }
    }

    #[test]
    fn budget_is_spent_then_refilled_on_progress() {
        let mut budget = Budget::new(&ReconnectPolicy::default().max_retries(2));
        assert_eq!(budget.take(), Some(0));
        assert_eq!(budget.take(), Some(1));
        assert_eq!(budget.take(), None);
        budget.refill();
        assert_eq!(budget.take(), Some(0));
        assert_eq!(Budget::new(&ReconnectPolicy::never()).take(), None);
    }

    #[test]
    fn odd_factors_are_tamed() {
        let policy = ReconnectPolicy::default().jitter(false).factor(f64::NAN);
        assert_eq!(policy.delay(5), Duration::from_secs(1));
        let policy = ReconnectPolicy::default().jitter(false).factor(0.1);
        assert_eq!(policy.delay(5), Duration::from_secs(1));
    }
}
