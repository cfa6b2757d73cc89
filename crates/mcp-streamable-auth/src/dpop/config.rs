//! What a guard accepts of DPoP: the mode, the algorithms, the time window, the nonces, the
//! public origin and the replay cache.

use std::{fmt, sync::Arc, time::Duration};

use super::replay::ReplayCache;

/// How long after its `iat` a proof is accepted: long enough for a request to cross a slow
/// network and a queue, short enough that a proof captured on the way is of little use after.
/// The replay cache remembers each proof this long (plus the clock skew), so the window is also
/// what its memory is sized for.
pub const DEFAULT_MAX_PROOF_AGE: Duration = Duration::from_secs(60);

/// How far in the future a proof's `iat` may be: clients' clocks run a little ahead of ours.
/// Larger skews are what server nonces are for ([`Config::require_nonce`]).
pub const DEFAULT_MAX_CLOCK_SKEW: Duration = Duration::from_secs(5);

/// How long a nonce the guard gave out stays good: a client asks for a new one (one more round
/// trip) at most this often, and a proof made with a nonce cannot be made in advance for longer.
pub const DEFAULT_NONCE_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// Proof keys whose parsed form the guard keeps (by the proof's header, which holds the key):
/// a client signs every proof with one key, so this is the number of clients that skip
/// parsing their key on each request. Some 1 KiB each at most (RSA), so a megabyte.
pub const DEFAULT_CACHED_KEYS: usize = 1024;

/// Proofs longer than this are refused before they are decoded. A proof with an RSA-4096 key
/// is under 3 KiB.
pub const MAX_PROOF_BYTES: usize = 8 * 1024;

/// A signature algorithm a proof may use. Only asymmetric ones exist here: a proof signed with
/// `none` or an HMAC key proves nothing about a key only the client holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Algorithm {
    /// ECDSA with P-256 and SHA-256, the one RFC 9449 expects everyone to support.
    ES256,
    /// ECDSA with P-384 and SHA-384.
    ES384,
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RSA keys of 2048 bits or more).
    RS256,
    /// RSASSA-PSS with SHA-256 (RSA keys of 2048 bits or more).
    PS256,
    /// EdDSA with Ed25519.
    EdDSA,
}

impl Algorithm {
    /// Every algorithm, in the order the default `algs` lists them.
    pub(crate) const ALL: [Algorithm; 5] = [
        Algorithm::ES256,
        Algorithm::ES384,
        Algorithm::EdDSA,
        Algorithm::PS256,
        Algorithm::RS256,
    ];

    /// The JOSE name (`alg`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::ES256 => "ES256",
            Algorithm::ES384 => "ES384",
            Algorithm::RS256 => "RS256",
            Algorithm::PS256 => "PS256",
            Algorithm::EdDSA => "EdDSA",
        }
    }
}

/// DPoP (RFC 9449) at the guard, given to [`GuardBuilder::dpop`](crate::GuardBuilder::dpop).
///
/// By default a guard with DPoP accepts both schemes: `Authorization: DPoP` with a proof for a
/// token bound to the proof's key, and `Authorization: Bearer` for a token bound to no key. A
/// token bound to a key is refused as `Bearer` in every mode, so a token the authorization server
/// bound is never usable without its key, whatever this setting; what [`required`](Self::required)
/// adds is refusing unbound tokens, which only keeps out the clients that cannot do DPoP yet
/// (most MCP clients today). Whether to bind is the authorization server's decision, made per
/// client; this side follows it.
///
/// ```
/// use mcp_streamable_auth::dpop;
///
/// let dpop = dpop::Config::default()
///     .required(true)
///     .require_nonce()
///     .public_origin("https://mcp.example.com");
/// # let _ = dpop;
/// ```
#[derive(Clone)]
#[must_use]
pub struct Config {
    pub(crate) required: bool,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) max_proof_age: Duration,
    pub(crate) max_clock_skew: Duration,
    pub(crate) public_origin: Option<String>,
    pub(crate) nonce: Option<NonceSecret>,
    pub(crate) nonce_lifetime: Duration,
    pub(crate) cached_keys: usize,
    pub(crate) replay: Option<Arc<dyn ReplayCache>>,
}

/// Where the key that authenticates nonces comes from.
#[derive(Clone)]
pub(crate) enum NonceSecret {
    /// Drawn when the guard is built: good for one node.
    Random,
    /// Given, the same on every node.
    Shared([u8; 32]),
}

impl Default for Config {
    fn default() -> Config {
        Config {
            required: false,
            algorithms: Algorithm::ALL.to_vec(),
            max_proof_age: DEFAULT_MAX_PROOF_AGE,
            max_clock_skew: DEFAULT_MAX_CLOCK_SKEW,
            public_origin: None,
            nonce: None,
            nonce_lifetime: DEFAULT_NONCE_LIFETIME,
            cached_keys: DEFAULT_CACHED_KEYS,
            replay: None,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nonce = match &self.nonce {
            None => "off",
            Some(NonceSecret::Random) => "random secret",
            Some(NonceSecret::Shared(_)) => "shared secret (redacted)",
        };
        f.debug_struct("Config")
            .field("required", &self.required)
            .field("algorithms", &self.algorithms)
            .field("max_proof_age", &self.max_proof_age)
            .field("max_clock_skew", &self.max_clock_skew)
            .field("public_origin", &self.public_origin)
            .field("nonce", &nonce)
            .field("nonce_lifetime", &self.nonce_lifetime)
            .field("cached_keys", &self.cached_keys)
            .field("shared_replay_cache", &self.replay.is_some())
            .finish()
    }
}

impl Config {
    /// Whether every request must use DPoP: `Authorization: Bearer` is then answered as no
    /// credentials at all (a 401 with the `DPoP` challenge only), and a token bound to no key is
    /// refused. Off by default.
    pub fn required(mut self, required: bool) -> Config {
        self.required = required;
        self
    }

    /// The algorithms proofs may be signed with, published in the challenge's `algs`. By
    /// default all of [`Algorithm`]'s. An empty list is refused when the guard is built.
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Config {
        self.algorithms = algorithms.into_iter().collect();
        self.algorithms.dedup();
        self
    }

    /// How long after its `iat` a proof is accepted; [`DEFAULT_MAX_PROOF_AGE`] by default.
    pub fn max_proof_age(mut self, age: Duration) -> Config {
        self.max_proof_age = age;
        self
    }

    /// How far ahead of this server's clock a proof's `iat` may be; [`DEFAULT_MAX_CLOCK_SKEW`]
    /// by default.
    pub fn max_clock_skew(mut self, skew: Duration) -> Config {
        self.max_clock_skew = skew;
        self
    }

    /// The origin (`https://mcp.example.com`, no path) clients reach this server at, which a
    /// proof's `htu` must name followed by the request's path. By default the origin of the
    /// guard's resource URL. The request's `Host`, `Forwarded` and `X-Forwarded-*` headers are
    /// never read: behind a proxy they say what the proxy or the client chose to write, and a
    /// proof made for another server would pass if they were believed.
    pub fn public_origin(mut self, origin: impl Into<String>) -> Config {
        self.public_origin = Some(origin.into());
        self
    }

    /// Requires a nonce given out by this server in every proof, authenticated with a key drawn
    /// when the guard is built. Enough for one node; nodes behind one load balancer need
    /// [`nonce_secret`](Self::nonce_secret) so that they accept each other's nonces.
    pub fn require_nonce(mut self) -> Config {
        if self.nonce.is_none() {
            self.nonce = Some(NonceSecret::Random);
        }
        self
    }

    /// Requires a nonce given out by this server in every proof, authenticated with `secret`:
    /// give every node the same secret (32 random bytes, kept like a password) and any node
    /// accepts a nonce another gave out, without sharing any state.
    pub fn nonce_secret(mut self, secret: [u8; 32]) -> Config {
        self.nonce = Some(NonceSecret::Shared(secret));
        self
    }

    /// How long a nonce stays good; [`DEFAULT_NONCE_LIFETIME`] by default.
    pub fn nonce_lifetime(mut self, lifetime: Duration) -> Config {
        self.nonce_lifetime = lifetime;
        self
    }

    /// How many proof keys are kept parsed; [`DEFAULT_CACHED_KEYS`] by default (0: parse every
    /// proof's key).
    pub fn cached_keys(mut self, max: usize) -> Config {
        self.cached_keys = max;
        self
    }

    /// Where the `jti` of accepted proofs are remembered. By default a
    /// [`MemoryReplayCache`](super::MemoryReplayCache) of its default capacity, of this guard
    /// (and its clones) alone: with several nodes, give them one cache they share, or a proof
    /// replayed to another node is accepted there.
    pub fn replay_cache(mut self, cache: impl ReplayCache + 'static) -> Config {
        self.replay = Some(Arc::new(cache));
        self
    }
}
