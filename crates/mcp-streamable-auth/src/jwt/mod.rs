//! A [`TokenVerifier`] for JWT access tokens (RFC 9068 and the like), with the authorization
//! server's keys fetched from its JWKS URL (the `jwt` feature).
//!
//! Signatures are checked with `jsonwebtoken` on its pure-Rust backend (`rust_crypto`); only
//! asymmetric algorithms are accepted (RS*, PS*, ES256, ES384, EdDSA), each key only with its
//! own, so neither `none` nor an HMAC token signed with a public key gets through.

mod jwks;

use std::{
    fmt,
    sync::{Arc, PoisonError, RwLock},
    time::{Duration, UNIX_EPOCH},
};

use jsonwebtoken::{Algorithm, Validation, errors::ErrorKind};
use mcp_http_client::HttpClient;
use serde::Deserialize;
use tokio::time::Instant;

use crate::{
    error::ConfigError, error::JwksError, error::TokenError, error::TokenErrorKind,
    metadata::split_http_url, principal::Principal, verifier::TokenVerifier,
    verifier::VerifyFuture,
};
use jwks::{Entry, Fetch, HttpFetch};

/// How far `exp` and `nbf` may be off: clocks of the authorization server and of this server
/// drift a little, and a token that just expired in transit should not bounce.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// How long one fetch of the key set may take, connection included.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The least time between two fetches: a flood of tokens with made-up key ids costs the
/// authorization server at most one request per interval.
pub const DEFAULT_MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(10);
/// How long fetched keys are trusted before the next token triggers a fetch, so that a key the
/// authorization server withdrew stops working. While a fetch fails, the old keys stay in use.
pub const DEFAULT_MAX_KEY_AGE: Duration = Duration::from_secs(60 * 60);
/// The most keys kept from one key set; real sets hold a handful.
pub const DEFAULT_MAX_KEYS: usize = 32;
/// The largest key set document read; real ones are a few kilobytes.
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// Verifies JWT access tokens: signature against the authorization server's keys, issuer,
/// audience (RFC 8707: `aud` must include the resource), expiry and not-before with a small
/// leeway. The [`Principal`] it returns carries `sub`, `iss`, `client_id` (or `azp`), `aud`,
/// `exp`, the scopes of `scope` (space-separated) and `scp` (array or space-separated), and the
/// DPoP key the token is bound to (`cnf.jkt`, RFC 9449 §6.1), which the guard then requires a
/// proof of.
///
/// Keys are fetched on first use (or by [`refresh`](JwtVerifier::refresh) at start-up), cached,
/// and fetched again when a token names an unknown key id (rate-limited by
/// [`min_refresh_interval`](JwtVerifierBuilder::min_refresh_interval)) or when they are older
/// than [`max_key_age`](JwtVerifierBuilder::max_key_age) (in a task of its own, while tokens go
/// on being checked with the old keys). A token with a known key costs no network and no lock
/// held across an await.
///
/// Cloning is cheap and clones share the cache.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_streamable_auth::{Guard, jwt::JwtVerifier};
///
/// let resource = "https://mcp.example.com/mcp";
/// let issuer = "https://auth.example.com";
/// let verifier = JwtVerifier::builder(issuer, "https://auth.example.com/.well-known/jwks.json", resource)
///     .build()?;
/// verifier.refresh().await?; // fail fast at start-up if the keys are out of reach
/// let guard = Guard::builder(resource)
///     .authorization_server(issuer)
///     .required_scopes(["mcp"])
///     .build(verifier)?;
/// # let _ = guard;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct JwtVerifier {
    shared: Arc<Shared>,
}

struct Shared {
    fetch: Box<dyn Fetch>,
    base: Validation,
    min_refresh_interval: Duration,
    max_key_age: Duration,
    max_keys: usize,
    keys: RwLock<Arc<KeySet>>,
    /// When the last fetch started; held across the fetch, so that fetches never overlap.
    last_fetch: tokio::sync::Mutex<Option<Instant>>,
}

#[derive(Default)]
struct KeySet {
    entries: Vec<Entry>,
    fetched_at: Option<Instant>,
    generation: u64,
}

impl KeySet {
    /// The key for a token's `kid`; a token without one may use the only key of a set of one.
    fn find(&self, kid: Option<&str>) -> Option<&Entry> {
        match kid {
            Some(kid) => self
                .entries
                .iter()
                .find(|entry| entry.kid.as_deref() == Some(kid)),
            None if self.entries.len() == 1 => self.entries.first(),
            None => None,
        }
    }
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.shared.base.iss)
            .field("audience", &self.shared.base.aud)
            .field("keys", &self.key_count())
            .finish_non_exhaustive()
    }
}

/// Settings for a [`JwtVerifier`], from [`JwtVerifier::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct JwtVerifierBuilder {
    issuer: String,
    jwks_url: String,
    audiences: Vec<String>,
    leeway: Duration,
    fetch_timeout: Duration,
    min_refresh_interval: Duration,
    max_key_age: Duration,
    max_keys: usize,
    max_document_bytes: usize,
    http_client: Option<Arc<dyn HttpClient>>,
}

impl JwtVerifierBuilder {
    /// Accepts tokens whose `aud` includes `audience` too (Entra's `api://...` application id,
    /// for example). The resource is always accepted.
    pub fn audience(mut self, audience: impl Into<String>) -> JwtVerifierBuilder {
        self.audiences.push(audience.into());
        self
    }

    /// The clock skew allowed for `exp` and `nbf`; [`DEFAULT_LEEWAY`] by default.
    pub fn leeway(mut self, leeway: Duration) -> JwtVerifierBuilder {
        self.leeway = leeway;
        self
    }

    /// The time one key set fetch may take; [`DEFAULT_FETCH_TIMEOUT`] by default.
    pub fn fetch_timeout(mut self, timeout: Duration) -> JwtVerifierBuilder {
        self.fetch_timeout = timeout;
        self
    }

    /// The least time between fetches; [`DEFAULT_MIN_REFRESH_INTERVAL`] by default.
    pub fn min_refresh_interval(mut self, interval: Duration) -> JwtVerifierBuilder {
        self.min_refresh_interval = interval;
        self
    }

    /// How long keys are trusted before a fetch; [`DEFAULT_MAX_KEY_AGE`] by default.
    pub fn max_key_age(mut self, age: Duration) -> JwtVerifierBuilder {
        self.max_key_age = age;
        self
    }

    /// The most keys kept from one key set; [`DEFAULT_MAX_KEYS`] by default.
    pub fn max_keys(mut self, max: usize) -> JwtVerifierBuilder {
        self.max_keys = max;
        self
    }

    /// The largest key set document read; [`DEFAULT_MAX_DOCUMENT_BYTES`] by default.
    pub fn max_document_bytes(mut self, max: usize) -> JwtVerifierBuilder {
        self.max_document_bytes = max;
        self
    }

    /// Fetches the key set through `client` instead of `mcp-http-client`'s default one (the
    /// application's own: a proxy's, one it shares with other crates). The fetch still takes
    /// at most the [`fetch_timeout`](Self::fetch_timeout), and a document over
    /// [`max_document_bytes`](Self::max_document_bytes) is refused.
    pub fn http_client(mut self, client: impl HttpClient + 'static) -> JwtVerifierBuilder {
        self.http_client = Some(Arc::new(client));
        self
    }

    /// Checks the JWKS URL (https, or http to the loopback only) and builds the verifier. No
    /// request is made yet.
    pub fn build(self) -> Result<JwtVerifier, ConfigError> {
        let url: http::Uri = self
            .jwks_url
            .parse()
            .map_err(|_| ConfigError::InvalidJwksUrl)?;
        if split_http_url(&self.jwks_url).is_none() {
            return Err(ConfigError::InvalidJwksUrl);
        }
        if url.scheme_str() != Some("https") && !is_loopback(url.host().unwrap_or_default()) {
            return Err(ConfigError::InsecureJwksUrl);
        }
        let client = self.http_client.clone();
        let fetch = HttpFetch::new(url, client, self.fetch_timeout, self.max_document_bytes)?;
        Ok(self.with_fetch(Box::new(fetch)))
    }

    fn with_fetch(self, fetch: Box<dyn Fetch>) -> JwtVerifier {
        let mut base = Validation::new(Algorithm::RS256);
        base.leeway = self.leeway.as_secs();
        base.validate_nbf = true;
        base.set_issuer(&[self.issuer]);
        base.set_audience(&self.audiences);
        base.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        JwtVerifier {
            shared: Arc::new(Shared {
                fetch,
                base,
                min_refresh_interval: self.min_refresh_interval,
                max_key_age: self.max_key_age,
                max_keys: self.max_keys.max(1),
                keys: RwLock::default(),
                last_fetch: tokio::sync::Mutex::new(None),
            }),
        }
    }
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl JwtVerifier {
    /// Starts the settings of a verifier for tokens issued by `issuer` (compared with `iss`
    /// exactly), signed with keys published at `jwks_url`, for `resource` (which `aud` must
    /// include: pass the same string as to [`Guard::builder`](crate::Guard::builder)).
    pub fn builder(
        issuer: impl Into<String>,
        jwks_url: impl Into<String>,
        resource: impl Into<String>,
    ) -> JwtVerifierBuilder {
        JwtVerifierBuilder {
            issuer: issuer.into(),
            jwks_url: jwks_url.into(),
            audiences: vec![resource.into()],
            leeway: DEFAULT_LEEWAY,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            min_refresh_interval: DEFAULT_MIN_REFRESH_INTERVAL,
            max_key_age: DEFAULT_MAX_KEY_AGE,
            max_keys: DEFAULT_MAX_KEYS,
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
            http_client: None,
        }
    }

    /// Fetches the key set now, whatever the rate limit, and returns how many keys it holds. On
    /// failure the keys already held stay.
    pub async fn refresh(&self) -> Result<usize, JwksError> {
        let mut last_fetch = self.shared.last_fetch.lock().await;
        self.fetch_locked(&mut last_fetch).await
    }

    /// How many keys are cached.
    pub fn key_count(&self) -> usize {
        self.keys().entries.len()
    }

    fn keys(&self) -> Arc<KeySet> {
        self.shared
            .keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    async fn fetch_locked(&self, last_fetch: &mut Option<Instant>) -> Result<usize, JwksError> {
        *last_fetch = Some(Instant::now());
        let result = match self.shared.fetch.fetch().await {
            Ok(document) => jwks::parse(&document, &self.shared.base, self.shared.max_keys),
            Err(e) => Err(e),
        };
        match result {
            Ok(entries) => {
                let count = entries.len();
                let mut keys = self
                    .shared
                    .keys
                    .write()
                    .unwrap_or_else(PoisonError::into_inner);
                let generation = keys.generation + 1;
                *keys = Arc::new(KeySet {
                    entries,
                    fetched_at: Some(Instant::now()),
                    generation,
                });
                tracing::debug!(keys = count, "jwks fetched");
                Ok(count)
            }
            Err(e) => {
                tracing::warn!(error = %e, source = ?std::error::Error::source(&e), "jwks fetch failed; keeping the keys held");
                Err(e)
            }
        }
    }

    /// Fetches the keys again unless another task did since `seen` was read, or the last fetch
    /// is too recent. With `wait` false, gives up at once when a fetch is under way.
    async fn refresh_after(&self, seen: &KeySet, wait: bool) -> (Arc<KeySet>, Option<JwksError>) {
        let mut last_fetch = if wait {
            self.shared.last_fetch.lock().await
        } else {
            match self.shared.last_fetch.try_lock() {
                Ok(guard) => guard,
                Err(_) => return (self.keys(), None),
            }
        };
        let current = self.keys();
        if current.generation != seen.generation {
            return (current, None);
        }
        let recent = last_fetch.is_some_and(|at| at.elapsed() < self.shared.min_refresh_interval);
        if recent {
            return (current, None);
        }
        let error = self.fetch_locked(&mut last_fetch).await.err();
        (self.keys(), error)
    }

    /// Starts a fetch on the runtime, unless one is under way or the last was too recent (or
    /// there is no runtime to start it on).
    fn refresh_in_background(&self, seen: &Arc<KeySet>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let due = match self.shared.last_fetch.try_lock() {
            Ok(last_fetch) => {
                !last_fetch.is_some_and(|at| at.elapsed() < self.shared.min_refresh_interval)
            }
            Err(_) => false,
        };
        if due {
            let (verifier, seen) = (self.clone(), seen.clone());
            runtime.spawn(async move {
                verifier.refresh_after(&seen, false).await;
            });
        }
    }

    async fn verify_token(&self, token: &str) -> Result<Principal, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(invalid)?;
        let kid = header.kid.as_deref();
        let mut keys = self.keys();
        let fresh = keys
            .fetched_at
            .is_some_and(|at| at.elapsed() < self.shared.max_key_age);
        if keys.find(kid).is_none() {
            // An unknown key (or no keys yet) waits for a fetch, which may bring it: this
            // request's own, or the one under way.
            let (current, error) = self.refresh_after(&keys, true).await;
            keys = current;
            if keys.fetched_at.is_none() {
                let unavailable = TokenError::new(TokenErrorKind::Unavailable);
                return Err(match error {
                    Some(error) => unavailable.with_source(error),
                    None => unavailable,
                });
            }
        } else if !fresh {
            // Old keys still verify this token; the set is fetched again beside it, so that no
            // request waits on the network for a key it already has.
            self.refresh_in_background(&keys);
        }
        let entry = keys.find(kid).ok_or_else(|| {
            TokenError::new(TokenErrorKind::Invalid).with_source("no key with the token's key id")
        })?;
        let data =
            jsonwebtoken::decode::<Claims>(token, &entry.key, &entry.validation).map_err(|e| {
                match e.kind() {
                    ErrorKind::ExpiredSignature => {
                        TokenError::new(TokenErrorKind::Expired).with_source(e)
                    }
                    ErrorKind::InvalidAudience => {
                        TokenError::new(TokenErrorKind::WrongAudience).with_source(e)
                    }
                    ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => {
                        TokenError::new(TokenErrorKind::WrongAudience).with_source(e)
                    }
                    _ => invalid(e),
                }
            })?;
        Ok(data.claims.into_principal())
    }
}

fn invalid(error: jsonwebtoken::errors::Error) -> TokenError {
    TokenError::new(TokenErrorKind::Invalid).with_source(error)
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.verify_token(token))
    }
}

/// The claims read into the [`Principal`]; `jsonwebtoken` checks `exp`, `nbf`, `iss`, `aud`.
#[derive(Deserialize)]
struct Claims {
    sub: String,
    iss: Option<String>,
    aud: Option<OneOrMany>,
    exp: Option<u64>,
    scope: Option<String>,
    scp: Option<OneOrMany>,
    client_id: Option<String>,
    azp: Option<String>,
    cnf: Option<Confirmation>,
}

/// The confirmation claim (RFC 7800); of its methods, only DPoP's `jkt` (RFC 9449 §6.1).
#[derive(Deserialize)]
struct Confirmation {
    jkt: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}

impl Claims {
    fn into_principal(self) -> Principal {
        let mut scopes: Vec<String> = Vec::new();
        if let Some(scope) = &self.scope {
            scopes.extend(scope.split_ascii_whitespace().map(str::to_owned));
        }
        match self.scp {
            // Entra writes `scp` as one space-separated string, Okta as an array.
            Some(OneOrMany::One(scp)) => {
                scopes.extend(scp.split_ascii_whitespace().map(str::to_owned));
            }
            Some(OneOrMany::Many(scp)) => scopes.extend(scp),
            None => {}
        }
        let mut principal = Principal::new(self.sub)
            .with_scopes(scopes)
            .with_audience(self.aud.map(OneOrMany::into_vec).unwrap_or_default());
        principal.issuer = self.iss;
        principal.client_id = self.client_id.or(self.azp);
        principal.expires_at = self.exp.map(|exp| UNIX_EPOCH + Duration::from_secs(exp));
        principal.jkt = self.cnf.and_then(|cnf| cnf.jkt);
        principal
    }
}

/// Seconds since the epoch, for tests that mint tokens.
#[cfg(test)]
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
