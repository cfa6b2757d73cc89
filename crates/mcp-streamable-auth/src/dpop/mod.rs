//! Sender-constrained access tokens: DPoP (RFC 9449) at the resource server (the `dpop`
//! feature).
//!
//! A DPoP-bound token names a public key (its `cnf.jkt`, the key's RFC 7638 thumbprint) and is
//! good only with a proof signed by that key: a JWT in the request's `DPoP` header that says which
//! request it is for. A stolen token is then useless without the client's private key.
//!
//! Given a [`Config`] ([`GuardBuilder::dpop`](crate::GuardBuilder::dpop)), the guard takes
//! `Authorization: DPoP <token>` and checks the proof as RFC 9449 §4.3 says:
//!
//! - exactly one `DPoP` header holding one JWT (three base64url parts, at most
//!   [`MAX_PROOF_BYTES`]), `typ` `dpop+jwt`, an `alg` of the [`Algorithm`]s allowed (never
//!   `none` nor an HMAC), a `jwk` header holding a public key (one with private members is
//!   refused) that verifies the signature;
//! - `htm` the request's method, `htu` the public origin and the request's path, query and
//!   fragment aside (see [`Config::public_origin`] for what is trusted behind a proxy);
//! - `iat` no older than [`Config::max_proof_age`] nor further ahead than
//!   [`Config::max_clock_skew`];
//! - `ath` the base64url SHA-256 of the access token;
//! - `nonce` one this server gave out, when [`Config::require_nonce`] is on;
//! - `jti` never seen in that window, by a [`ReplayCache`];
//! - and the token's `cnf.jkt` ([`Principal::jkt`](crate::Principal::jkt), which the verifier
//!   reports) the thumbprint of the proof's key.
//!
//! A token bound to a key and sent as `Bearer`, and a token bound to none sent as `DPoP`, are
//! refused. A failed proof gets a 401 with `WWW-Authenticate: DPoP error="invalid_dpop_proof"`;
//! a missing or stale nonce gets `error="use_dpop_nonce"` with a fresh nonce in `DPoP-Nonce`.
//! Every challenge carries `algs`, and a guard that accepts both schemes sends both challenges
//! to a request without credentials.
//!
//! The [`Principal`](crate::Principal) of a DPoP request carries the key's thumbprint in
//! [`Principal::jkt`](crate::Principal::jkt), and [`Principal::key`](crate::Principal::key)
//! includes it, so that a session bound to that key is not found with another.
//!
//! # Nonces without shared state
//!
//! A nonce is the time it was given out and an HMAC-SHA-256 of it under a key the guard holds:
//! any node with the key ([`Config::nonce_secret`]) checks any node's nonce, and its age, with
//! no store and no round trip. A nonce only has to prove that the proof was made after the
//! server spoke, which is a matter of time; stopping a proof used twice is the replay cache's
//! work, with or without nonces. A nonce stays good for [`Config::nonce_lifetime`], so a client
//! asks for a new one (one 401 and a retry) that often.
//!
//! # Cost
//!
//! Each request costs one signature check, which nothing may skip. The rest is paid once per
//! client key: the header (algorithm, key, thumbprint) is parsed once and kept by its bytes
//! ([`Config::cached_keys`]), and the token itself is verified once and kept as for bearer
//! requests ([`GuardBuilder::cached_tokens`](crate::GuardBuilder::cached_tokens)).

mod config;
pub(crate) mod error;
mod htu;
mod key;
mod nonce;
mod proof;
mod replay;
mod signature;

use std::{
    fmt,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use sha2::{Digest, Sha256};

pub use config::{
    Algorithm, Config, DEFAULT_CACHED_KEYS, DEFAULT_MAX_CLOCK_SKEW, DEFAULT_MAX_PROOF_AGE,
    DEFAULT_NONCE_LIFETIME, MAX_PROOF_BYTES,
};
pub use replay::{DEFAULT_REPLAY_CAPACITY, MemoryReplayCache, ProofId, ReplayCache, ReplayFuture};

use crate::{error::ConfigError, error::ReplayError};
use error::ProofError;
use htu::Origin;
use key::KeyCache;
use nonce::Nonces;

/// The request header that carries the proof.
pub const DPOP: HeaderName = HeaderName::from_static("dpop");
/// The response header that carries a nonce for the client's next proofs.
pub const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

/// A proof that passed every check but the replay cache's.
pub(crate) struct Verified {
    pub(crate) jkt: Arc<str>,
    pub(crate) id: ProofId,
}

/// The DPoP side of a guard, built once from its [`Config`].
pub(crate) struct Checker {
    required: bool,
    algorithms: Vec<Algorithm>,
    algs: String,
    origin: Origin,
    max_proof_age: Duration,
    max_clock_skew: Duration,
    nonces: Option<Nonces>,
    keys: KeyCache,
    replay: Arc<dyn ReplayCache>,
}

impl Checker {
    /// `resource_origin`: the origin of the guard's resource URL, the default public origin.
    pub(crate) fn new(config: Config, resource_origin: &str) -> Result<Checker, ConfigError> {
        if config.algorithms.is_empty() {
            return Err(ConfigError::NoDpopAlgorithm);
        }
        let origin = Origin::parse(config.public_origin.as_deref().unwrap_or(resource_origin))?;
        let nonces = match &config.nonce {
            Some(secret) => Some(Nonces::new(
                secret,
                config.nonce_lifetime,
                config.max_clock_skew,
            )?),
            None => None,
        };
        let algs = config
            .algorithms
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Checker {
            required: config.required,
            algs,
            algorithms: config.algorithms,
            origin,
            max_proof_age: config.max_proof_age,
            max_clock_skew: config.max_clock_skew,
            nonces,
            keys: KeyCache::new(config.cached_keys),
            replay: config
                .replay
                .unwrap_or_else(|| Arc::new(MemoryReplayCache::default())),
        })
    }

    /// Whether `Authorization: Bearer` is accepted too.
    pub(crate) fn accepts_bearer(&self) -> bool {
        !self.required
    }

    /// The `algs` of the challenge: the allowed algorithms, space-separated.
    pub(crate) fn algs(&self) -> &str {
        &self.algs
    }

    /// A new nonce for a `DPoP-Nonce` header, when nonces are required.
    pub(crate) fn fresh_nonce(&self) -> Option<HeaderValue> {
        self.nonces.as_ref().map(|n| n.issue(SystemTime::now()))
    }

    /// Checks the request's proof for `token`: everything but the token's binding and the
    /// replay cache.
    pub(crate) fn verify(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        token: &str,
        now: SystemTime,
    ) -> Result<Verified, ProofError> {
        let proof = one_proof(headers)?;
        let proof::Signed { key, claims } = proof::verify(proof, &self.keys, &self.algorithms)?;
        if claims.htm != method.as_str() {
            return Err(ProofError::Method);
        }
        if !self.origin.matches(&claims.htu, uri.path()) {
            return Err(ProofError::Url);
        }
        self.check_iat(claims.iat, now)?;
        if claims.ath.as_deref() != Some(access_token_hash(token).as_str()) {
            return Err(ProofError::AccessTokenHash);
        }
        if let Some(nonces) = &self.nonces {
            nonces
                .check(claims.nonce.as_deref(), now)
                .map_err(ProofError::Nonce)?;
        }
        let id = ProofId::new(&key.jkt, &claims.jti);
        Ok(Verified {
            jkt: key.jkt.clone(),
            id,
        })
    }

    /// Whether the proof `id` is used for the first time; remembered as long as a proof could
    /// be accepted.
    pub(crate) async fn first_use(&self, id: &ProofId) -> Result<bool, ReplayError> {
        self.replay
            .first_use(id, self.max_proof_age + self.max_clock_skew)
            .await
    }

    fn check_iat(&self, iat: i64, now: SystemTime) -> Result<(), ProofError> {
        let now = now
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        // Whole seconds: a proof made in the current second is not "in the future".
        let iat = iat as f64;
        if iat > now.floor() + self.max_clock_skew.as_secs_f64() {
            return Err(ProofError::Future);
        }
        if now - iat > self.max_proof_age.as_secs_f64() {
            return Err(ProofError::TooOld);
        }
        Ok(())
    }
}

impl fmt::Debug for Checker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checker")
            .field("required", &self.required)
            .field("algs", &self.algs)
            .field("origin", &self.origin)
            .field("nonces", &self.nonces.is_some())
            .finish_non_exhaustive()
    }
}

/// The value of the request's one `DPoP` header.
fn one_proof(headers: &HeaderMap) -> Result<&str, ProofError> {
    let mut values = headers.get_all(DPOP).iter();
    let value = values.next().ok_or(ProofError::Missing)?;
    if values.next().is_some() {
        return Err(ProofError::Repeated);
    }
    value.to_str().map_err(|_| ProofError::Malformed)
}

/// `ath`: base64url of the SHA-256 of the access token's ASCII (RFC 9449 §4.2).
pub(crate) fn access_token_hash(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}
