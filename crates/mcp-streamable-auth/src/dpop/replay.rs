//! The proofs already accepted, so that none is accepted twice: a trait another crate can
//! implement on shared storage, and a bounded cache in memory.

use std::{
    collections::{HashSet, VecDeque},
    fmt,
    future::Future,
    pin::Pin,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use sha2::{Digest, Sha256};

use crate::error::ReplayError;

/// Proofs remembered by default: 16 bytes of each id in a hash set, and again with its expiry in
/// a queue, about 60 MB when full (the tables grow by powers of two), enough for 15,000 DPoP
/// requests a second on one node over the default window of 65 s
/// ([`DEFAULT_MAX_PROOF_AGE`](super::DEFAULT_MAX_PROOF_AGE) plus the clock skew). Past it, new
/// proofs are refused (503) until old ones expire: size it to the node's rate times the window.
pub const DEFAULT_REPLAY_CAPACITY: usize = 1_000_000;

/// Which proof: SHA-256 of the proof key's thumbprint and the proof's `jti`, so that every entry
/// has the same small size whatever the client sent, and two clients cannot collide by choosing
/// the same `jti`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProofId([u8; 32]);

impl ProofId {
    /// The id of the proof with `jti` signed by the key of thumbprint `jkt` (what the guard
    /// records; for the tests of a cache written elsewhere).
    pub fn new(jkt: &str, jti: &str) -> ProofId {
        let mut hash = Sha256::new();
        hash.update(jkt.as_bytes());
        hash.update([0]);
        hash.update(jti.as_bytes());
        ProofId(hash.finalize().into())
    }

    /// The 32 bytes, to use as (part of) a key in shared storage.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for ProofId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProofId(")?;
        for byte in &self.0[..8] {
            write!(f, "{byte:02x}")?;
        }
        f.write_str("…)")
    }
}

/// The future a [`ReplayCache`] returns: boxed, so that the trait stays object-safe.
pub type ReplayFuture<'a> = Pin<Box<dyn Future<Output = Result<bool, ReplayError>> + Send + 'a>>;

/// Remembers the proofs the guard accepted, so that a proof sent again (a `jti` seen before) is
/// refused. [`MemoryReplayCache`] serves one node; to refuse a proof replayed to another node,
/// implement this on storage the nodes share (Redis: `SET key 1 NX PX ttl`).
pub trait ReplayCache: Send + Sync {
    /// Records `id` for at least `ttl`: `Ok(true)` if it was not recorded yet (the proof is
    /// used for the first time), `Ok(false)` if it was (a replay). Two calls with the same `id`
    /// at the same time, on any node sharing the storage, must not both get `true`. An error
    /// makes the guard answer 503: a cache that cannot tell must not let a replay through.
    fn first_use<'a>(&'a self, id: &'a ProofId, ttl: Duration) -> ReplayFuture<'a>;
}

impl<C: ReplayCache + ?Sized> ReplayCache for std::sync::Arc<C> {
    fn first_use<'a>(&'a self, id: &'a ProofId, ttl: Duration) -> ReplayFuture<'a> {
        (**self).first_use(id, ttl)
    }
}

/// A [`ReplayCache`] in this process's memory, bounded in entries and in time: an entry leaves
/// when its time to live is over, and when the cache is full of live entries a new proof is
/// refused with a [`ReplayError`] (a 503) rather than an unexpired one forgotten, since a
/// forgotten proof could be replayed.
///
/// ```
/// use mcp_streamable_auth::dpop::MemoryReplayCache;
///
/// let cache = MemoryReplayCache::new(10_000);
/// assert_eq!(cache.len(), 0);
/// ```
pub struct MemoryReplayCache {
    state: Mutex<State>,
    capacity: usize,
}

/// What the cache keeps of a proof: the first 16 bytes of its id, a SHA-256 already, which two
/// proofs share by chance with a probability of 2^-128 a pair.
type Short = [u8; 16];

struct State {
    /// Where the cache's clock starts: expiries are milliseconds after it.
    epoch: Instant,
    live: HashSet<Short>,
    /// In the order of insertion, which is the order of expiry as long as every entry gets the
    /// same time to live (a guard's always does); an entry given a shorter one waits for those
    /// before it, which only keeps it longer.
    by_expiry: VecDeque<(u64, Short)>,
}

impl State {
    fn ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }
}

fn short(id: &ProofId) -> Short {
    let mut bytes = [0; 16];
    bytes.copy_from_slice(&id.0[..16]);
    bytes
}

impl MemoryReplayCache {
    /// A cache of at most `capacity` live proofs.
    pub fn new(capacity: usize) -> MemoryReplayCache {
        MemoryReplayCache {
            state: Mutex::new(State {
                epoch: Instant::now(),
                live: HashSet::new(),
                by_expiry: VecDeque::new(),
            }),
            capacity,
        }
    }

    /// How many proofs are remembered, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        self.lock().live.len()
    }

    /// Whether no proof is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn first_use_at(&self, id: &ProofId, ttl: Duration, now: Instant) -> Result<bool, ReplayError> {
        let mut state = self.lock();
        let at = state.ms(now);
        while let Some((until, old)) = state.by_expiry.front().copied() {
            if until > at {
                break;
            }
            state.by_expiry.pop_front();
            state.live.remove(&old);
        }
        let id = short(id);
        if state.live.contains(&id) {
            return Ok(false);
        }
        if state.live.len() >= self.capacity {
            return Err(ReplayError::new().with_source("replay cache full of live proofs"));
        }
        state.live.insert(id);
        // A millisecond more: the clock is read to the millisecond, rounded down, so an entry
        // never leaves before its time to live is over.
        let ttl = u64::try_from(ttl.as_millis())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        state.by_expiry.push_back((at.saturating_add(ttl), id));
        Ok(true)
    }
}

impl Default for MemoryReplayCache {
    fn default() -> MemoryReplayCache {
        MemoryReplayCache::new(DEFAULT_REPLAY_CAPACITY)
    }
}

impl fmt::Debug for MemoryReplayCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryReplayCache")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl ReplayCache for MemoryReplayCache {
    fn first_use<'a>(&'a self, id: &'a ProofId, ttl: Duration) -> ReplayFuture<'a> {
        Box::pin(std::future::ready(self.first_use_at(
            id,
            ttl,
            Instant::now(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_is_accepted_once_until_it_expires() {
        let cache = MemoryReplayCache::new(8);
        let ttl = Duration::from_secs(65);
        let start = Instant::now();
        let id = ProofId::new("key", "jti-1");
        assert_eq!(cache.first_use_at(&id, ttl, start).ok(), Some(true));
        assert_eq!(cache.first_use_at(&id, ttl, start).ok(), Some(false));
        let almost = start + ttl - Duration::from_millis(1);
        assert_eq!(cache.first_use_at(&id, ttl, almost).ok(), Some(false));
        // Expired (within a millisecond after its time): forgotten, and the memory with it.
        let later = start + ttl + Duration::from_millis(1);
        let other = ProofId::new("key", "jti-2");
        assert_eq!(cache.first_use_at(&other, ttl, later).ok(), Some(true));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.first_use_at(&id, ttl, later).ok(), Some(true));
    }

    #[test]
    fn the_bound_holds_and_a_full_cache_refuses_rather_than_forgets() {
        let cache = MemoryReplayCache::new(3);
        let ttl = Duration::from_secs(10);
        let start = Instant::now();
        for i in 0..3 {
            let id = ProofId::new("key", &i.to_string());
            assert_eq!(cache.first_use_at(&id, ttl, start).ok(), Some(true));
        }
        let fourth = ProofId::new("key", "3");
        assert!(cache.first_use_at(&fourth, ttl, start).is_err());
        // The ones it holds are still refused as replays.
        let first = ProofId::new("key", "0");
        assert_eq!(cache.first_use_at(&first, ttl, start).ok(), Some(false));
        assert_eq!(cache.len(), 3);
        // Once they expire, there is room again.
        let later = start + ttl + Duration::from_millis(1);
        assert_eq!(cache.first_use_at(&fourth, ttl, later).ok(), Some(true));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_default_holds_a_busy_node_s_proofs_for_the_default_window() {
        // 100,000 (the first default) held 1,500 proofs a second: the load suite's DPoP row, at
        // 9,000 a second, got a 503 for one request in three.
        let window = super::super::DEFAULT_MAX_PROOF_AGE + super::super::DEFAULT_MAX_CLOCK_SKEW;
        let per_second = DEFAULT_REPLAY_CAPACITY as u64 / window.as_secs();
        assert!(per_second >= 15_000, "{per_second} proofs a second");
    }

    #[test]
    fn ids_tell_keys_and_jtis_apart() {
        assert_ne!(ProofId::new("a", "b"), ProofId::new("b", "a"));
        assert_ne!(ProofId::new("ab", "c"), ProofId::new("a", "bc"));
        assert_eq!(ProofId::new("a", "b"), ProofId::new("a", "b"));
    }
}
