//! The buckets of one process: GCRA over a map from bucket to its theoretical arrival time,
//! bounded in how many it keeps.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::{Bucket, Quota, RateFuture, RateStore};

/// How many buckets an [`InMemoryRateStore`] keeps by default: about 80 bytes each, some 8 MiB.
/// A bucket that has refilled is the same as none and goes first; past the cap, those nearest
/// to refilled go, so a limit may be forgotten early but nobody is refused for another.
pub const DEFAULT_MAX_RATE_BUCKETS: usize = 100_000;

/// Keeps rate-limit buckets in this process (the default store of
/// [`RateLimit`](super::RateLimit)); several nodes each keep their own, so a client's limit
/// holds per node. Bounded: at most [`DEFAULT_MAX_RATE_BUCKETS`] buckets, or the cap given.
#[derive(Debug)]
pub struct InMemoryRateStore {
    /// Where the clock of the buckets starts; their times are microseconds after it.
    epoch: Instant,
    max: usize,
    buckets: Mutex<HashMap<(String, String), u64>>,
}

impl Default for InMemoryRateStore {
    fn default() -> Self {
        InMemoryRateStore::new(DEFAULT_MAX_RATE_BUCKETS)
    }
}

impl InMemoryRateStore {
    /// A store keeping at most `max` buckets (at least 1).
    pub fn new(max: usize) -> InMemoryRateStore {
        InMemoryRateStore {
            epoch: Instant::now(),
            max: max.max(1),
            buckets: Mutex::default(),
        }
    }

    /// How many buckets are kept now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no bucket is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), u64>> {
        self.buckets.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn charge_now(&self, buckets: &[Bucket<'_>]) -> Option<Duration> {
        let now = micros(Instant::now().saturating_duration_since(self.epoch));
        let mut map = self.lock();
        let mut next = Vec::with_capacity(buckets.len());
        let mut wait = 0;
        for bucket in buckets {
            let key = (bucket.client.to_owned(), bucket.name.to_owned());
            let tat = map.get(&key).copied().unwrap_or(now);
            match step(tat, now, bucket.quota, bucket.cost) {
                Ok(tat) => next.push((key, tat)),
                Err(w) => wait = wait.max(w),
            }
        }
        if wait > 0 {
            return Some(Duration::from_micros(wait));
        }
        for (key, tat) in next {
            if !map.contains_key(&key) && map.len() >= self.max {
                shrink(&mut map, now, self.max);
            }
            map.insert(key, tat);
        }
        None
    }
}

impl RateStore for InMemoryRateStore {
    fn charge<'a>(&'a self, buckets: &'a [Bucket<'a>]) -> RateFuture<'a> {
        let decided = self.charge_now(buckets);
        Box::pin(async move { Ok(decided) })
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// One GCRA step, in microseconds: the bucket's next theoretical arrival time if a request of
/// `cost` fits, else how long until it would.
pub(crate) fn step(tat: u64, now: u64, quota: Quota, cost: u32) -> Result<u64, u64> {
    let interval = micros(quota.interval());
    let next = tat
        .max(now)
        .saturating_add(interval.saturating_mul(u64::from(cost)));
    let allowed = now.saturating_add(interval.saturating_mul(u64::from(quota.burst_size())));
    if next <= allowed {
        Ok(next)
    } else {
        Err(next - allowed)
    }
}

/// Makes room for one more bucket: those refilled go (the same as none), then, if that is not
/// enough, those nearest to refilled, down to seven eighths of the cap, so that the next
/// inserts do not each scan the map.
fn shrink(map: &mut HashMap<(String, String), u64>, now: u64, max: usize) {
    map.retain(|_, tat| *tat > now);
    if map.len() < max {
        return;
    }
    let keep = (max - max / 8).saturating_sub(1);
    if keep == 0 {
        map.clear();
        return;
    }
    // The `cut` buckets nearest to refilled go (ties with the last of them too).
    let mut tats: Vec<u64> = map.values().copied().collect();
    let cut = tats.len() - keep;
    let threshold = *tats.select_nth_unstable(cut - 1).1;
    map.retain(|_, tat| *tat > threshold);
    tracing::debug!(
        kept = map.len(),
        "rate limit buckets over their cap: the nearest to refilled went"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(client: &str, quota: Quota) -> Bucket<'_> {
        Bucket {
            client,
            name: "*",
            quota,
            cost: 1,
        }
    }

    #[test]
    fn gcra_lets_a_burst_through_then_one_per_interval() {
        let quota = Quota::every(Duration::from_micros(100)).burst(3);
        let mut tat = 1_000;
        for _ in 0..3 {
            tat = step(tat, 1_000, quota, 1).unwrap();
        }
        assert_eq!(step(tat, 1_000, quota, 1), Err(100));
        assert_eq!(step(tat, 1_099, quota, 1), Err(1));
        assert_eq!(step(tat, 1_100, quota, 1), Ok(1_400));
        // A cost larger than the burst never fits: the wait says how far it is.
        assert_eq!(step(0, 0, quota, 5), Err(200));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_over_one_bucket_is_charged_to_none() {
        let store = InMemoryRateStore::default();
        let (all, calls) = (Quota::per_second(10), Quota::per_second(1));
        let both = |cost| {
            [
                bucket("a", all),
                Bucket {
                    client: "a",
                    name: "tools/call",
                    quota: calls,
                    cost,
                },
            ]
        };
        assert_eq!(store.charge(&both(1)).await.unwrap(), None);
        let wait = store.charge(&both(1)).await.unwrap().unwrap();
        assert_eq!(wait, Duration::from_secs(1));
        // The refused call charged nothing to the bucket of all requests: nine more fit.
        for _ in 0..9 {
            assert_eq!(store.charge(&[bucket("a", all)]).await.unwrap(), None);
        }
        assert!(store.charge(&[bucket("a", all)]).await.unwrap().is_some());
        // Another client has buckets of its own.
        assert_eq!(store.charge(&[bucket("b", all)]).await.unwrap(), None);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(store.charge(&both(1)).await.unwrap(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_buckets_kept_stay_under_the_cap() {
        let store = InMemoryRateStore::new(64);
        let quota = Quota::per_minute(1);
        for i in 0..1_000 {
            let client = format!("ip 10.0.{}.{}", i / 256, i % 256);
            assert_eq!(store.charge(&[bucket(&client, quota)]).await.unwrap(), None);
            assert!(store.len() <= 64, "{} buckets", store.len());
        }
        // Refilled buckets are the same as none: they go first.
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(store.charge(&[bucket("late", quota)]).await.unwrap(), None);
        assert!(store.len() <= 64);
        assert!(
            store
                .charge(&[bucket("late", quota)])
                .await
                .unwrap()
                .is_some()
        );
    }
}
