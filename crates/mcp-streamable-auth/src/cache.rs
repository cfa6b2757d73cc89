//! The tokens a guard has accepted lately, so that a client sending the same token on every
//! request pays for its verification once: a signature check costs far more than serving the
//! request (an RSA-2048 signature in pure Rust, some 300 µs against 25 µs for a whole MCP
//! request), and a client sends the same token until it refreshes it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::principal::Principal;

/// Tokens kept by default: enough for the clients of a busy server, about a megabyte at most.
pub const DEFAULT_CACHED_TOKENS: usize = 1024;

/// How long an accepted token is taken at its word without asking the verifier again: a
/// minute, so that a token revoked where the verifier can tell (introspection), or a key
/// withdrawn from the key set, stops working within that time.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);

/// Bounded in entries and in time; expired tokens are never served from it.
pub(crate) struct TokenCache {
    entries: Mutex<HashMap<Box<str>, Entry>>,
    max: usize,
    ttl: Duration,
}

struct Entry {
    principal: Principal,
    until: Instant,
}

impl TokenCache {
    pub(crate) fn new(max: usize, ttl: Duration) -> Self {
        TokenCache {
            entries: Mutex::new(HashMap::new()),
            max,
            ttl,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Box<str>, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The principal of `token`, if it was accepted lately and has not expired.
    pub(crate) fn get(&self, token: &str) -> Option<Principal> {
        if self.max == 0 {
            return None;
        }
        let mut entries = self.lock();
        let entry = entries.get(token)?;
        if entry.until > Instant::now() {
            return Some(entry.principal.clone());
        }
        entries.remove(token);
        None
    }

    /// Remembers that `token` stands for `principal`, until it expires or the time to live
    /// runs out. When full, expired entries go first, then an arbitrary one.
    pub(crate) fn put(&self, token: &str, principal: &Principal) {
        if self.max == 0 {
            return;
        }
        let now = Instant::now();
        let left = match principal.expires_at {
            Some(at) => at
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO)
                .min(self.ttl),
            None => self.ttl,
        };
        if left.is_zero() {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= self.max && !entries.contains_key(token) {
            entries.retain(|_, e| e.until > now);
            if entries.len() >= self.max
                && let Some(victim) = entries.keys().next().cloned()
            {
                entries.remove(&victim);
            }
        }
        let entry = Entry {
            principal: principal.clone(),
            until: now + left,
        };
        entries.insert(token.into(), entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_tokens_are_kept_until_they_expire_and_within_the_bound() {
        let cache = TokenCache::new(2, Duration::from_secs(60));
        let alice = Principal::new("alice");
        cache.put("a", &alice);
        assert_eq!(cache.get("a"), Some(alice.clone()));
        assert_eq!(cache.get("b"), None);
        // A token that expired is never kept, nor served.
        let gone =
            Principal::new("old").with_expires_at(SystemTime::now() - Duration::from_secs(1));
        cache.put("old", &gone);
        assert_eq!(cache.get("old"), None);
        // Full: one goes to make room, and the bound holds.
        cache.put("b", &Principal::new("bob"));
        cache.put("c", &Principal::new("carol"));
        assert_eq!(cache.lock().len(), 2);
        assert_eq!(cache.get("c").map(|p| p.subject), Some("carol".to_owned()));
        // Disabled: nothing kept.
        let off = TokenCache::new(0, Duration::from_secs(60));
        off.put("a", &alice);
        assert_eq!(off.get("a"), None);
    }

    #[test]
    fn an_entry_lives_no_longer_than_its_token_or_the_time_to_live() {
        let cache = TokenCache::new(8, Duration::from_millis(1));
        cache.put("a", &Principal::new("alice"));
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(cache.get("a"), None);
        let cache = TokenCache::new(8, Duration::from_secs(60));
        let soon =
            Principal::new("s").with_expires_at(SystemTime::now() + Duration::from_millis(1));
        cache.put("s", &soon);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(cache.get("s"), None);
    }
}
