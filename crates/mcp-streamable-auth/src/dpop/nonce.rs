//! Server nonces (RFC 9449 §9) that need no state: the time a nonce was given out, and an HMAC
//! of it under the guard's key. Any node holding the key can tell a nonce it or another node
//! gave out, and how old it is, without asking anyone.
//!
//! A nonce proves one thing: the proof was made after the server said so, so that a proof
//! cannot be made in advance (by malware on the client, say) for use later. That is a matter of
//! time, which a signed timestamp carries whole. It is not what stops a proof being used twice:
//! the replay cache does that, for proofs with a nonce as for those without.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use http::HeaderValue;
use sha2::Sha256;

use super::config::NonceSecret;
use crate::error::ConfigError;

/// Bytes of the HMAC kept in a nonce: 128 bits, beyond guessing within a nonce's lifetime.
const TAG_BYTES: usize = 16;

/// Gives out and checks nonces; the key never leaves it.
pub(crate) struct Nonces {
    mac: Hmac<Sha256>,
    lifetime: Duration,
    skew: Duration,
}

/// What is wrong with a proof's nonce: both answered with a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stale {
    Missing,
    Invalid,
    Expired,
}

impl Nonces {
    pub(crate) fn new(
        secret: &NonceSecret,
        lifetime: Duration,
        skew: Duration,
    ) -> Result<Nonces, ConfigError> {
        let mut key = [0u8; 32];
        match secret {
            NonceSecret::Shared(given) => key = *given,
            NonceSecret::Random => {
                getrandom::getrandom(&mut key).map_err(|_| ConfigError::Random)?
            }
        }
        let mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|_| ConfigError::Random)?;
        Ok(Nonces {
            mac,
            lifetime,
            skew,
        })
    }

    /// A nonce given out at `now`.
    pub(crate) fn issue(&self, now: SystemTime) -> HeaderValue {
        let seconds = seconds(now);
        let mut bytes = [0u8; 8 + TAG_BYTES];
        bytes[..8].copy_from_slice(&seconds.to_be_bytes());
        bytes[8..].copy_from_slice(&self.tag(seconds)[..TAG_BYTES]);
        let text = URL_SAFE_NO_PAD.encode(bytes);
        // base64url is always a valid header value.
        HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// Whether `nonce` was given out by a holder of the key, no longer than the lifetime ago.
    pub(crate) fn check(&self, nonce: Option<&str>, now: SystemTime) -> Result<(), Stale> {
        let nonce = nonce.ok_or(Stale::Missing)?;
        let mut bytes = [0u8; 8 + TAG_BYTES];
        match URL_SAFE_NO_PAD.decode_slice(nonce, &mut bytes) {
            Ok(n) if n == bytes.len() => {}
            _ => return Err(Stale::Invalid),
        }
        let seconds = u64::from_be_bytes(bytes[..8].try_into().unwrap_or_default());
        let mut mac = self.mac.clone();
        mac.update(&seconds.to_be_bytes());
        mac.verify_truncated_left(&bytes[8..])
            .map_err(|_| Stale::Invalid)?;
        let now = seconds_f(now);
        let issued = seconds as f64;
        if issued > now + self.skew.as_secs_f64() || now - issued > self.lifetime.as_secs_f64() {
            return Err(Stale::Expired);
        }
        Ok(())
    }

    fn tag(&self, seconds: u64) -> [u8; 32] {
        let mut mac = self.mac.clone();
        mac.update(&seconds.to_be_bytes());
        mac.finalize().into_bytes().into()
    }
}

fn seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn seconds_f(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nonces(secret: [u8; 32]) -> Nonces {
        let lifetime = Duration::from_secs(300);
        Nonces::new(
            &NonceSecret::Shared(secret),
            lifetime,
            Duration::from_secs(5),
        )
        .unwrap()
    }

    #[test]
    fn a_nonce_is_good_on_every_node_with_the_key_for_its_lifetime() {
        let (a, b) = (nonces([7; 32]), nonces([7; 32]));
        let now = SystemTime::now();
        let nonce = a.issue(now);
        let nonce = nonce.to_str().unwrap();
        assert_eq!(b.check(Some(nonce), now), Ok(()));
        assert_eq!(b.check(Some(nonce), now + Duration::from_secs(299)), Ok(()));
        assert_eq!(
            b.check(Some(nonce), now + Duration::from_secs(302)),
            Err(Stale::Expired)
        );
        // Given out in the future (another node's clock far ahead): not yet.
        assert_eq!(
            b.check(Some(nonce), now - Duration::from_secs(60)),
            Err(Stale::Expired)
        );
    }

    #[test]
    fn forged_changed_or_missing_nonces_are_refused() {
        let now = SystemTime::now();
        let theirs = nonces([1; 32]).issue(now);
        let ours = nonces([2; 32]);
        assert_eq!(
            ours.check(Some(theirs.to_str().unwrap()), now),
            Err(Stale::Invalid)
        );
        assert_eq!(ours.check(None, now), Err(Stale::Missing));
        assert_eq!(ours.check(Some("AAAA"), now), Err(Stale::Invalid));
        assert_eq!(ours.check(Some("not base64!"), now), Err(Stale::Invalid));
        // A later time under the old tag.
        let good = ours.issue(now);
        let mut bytes = URL_SAFE_NO_PAD.decode(good.to_str().unwrap()).unwrap();
        bytes[7] ^= 1;
        let moved = URL_SAFE_NO_PAD.encode(bytes);
        assert_eq!(ours.check(Some(&moved), now), Err(Stale::Invalid));
    }

    #[test]
    fn random_keys_differ() {
        let now = SystemTime::now();
        let lifetime = Duration::from_secs(300);
        let a = Nonces::new(&NonceSecret::Random, lifetime, Duration::ZERO).unwrap();
        let b = Nonces::new(&NonceSecret::Random, lifetime, Duration::ZERO).unwrap();
        let nonce = a.issue(now);
        assert_eq!(a.check(Some(nonce.to_str().unwrap()), now), Ok(()));
        assert_eq!(
            b.check(Some(nonce.to_str().unwrap()), now),
            Err(Stale::Invalid)
        );
    }
}
