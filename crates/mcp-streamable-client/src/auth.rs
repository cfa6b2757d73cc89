//! The authorization provider: a callback asked for the `Authorization` header of each request.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use http::{HeaderValue, Method, StatusCode, Uri};

use crate::error::BoxError;

/// The future an [`AuthProvider`] returns.
pub type AuthFuture = Pin<Box<dyn Future<Output = Result<Option<HeaderValue>, BoxError>> + Send>>;

/// What the transport tells an [`AuthProvider`] when it asks for a header value.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct AuthContext {
    /// The value the server has just refused with 401 (or 403 `insufficient_scope`), when this
    /// call is the retry after one: the provider should refresh its token rather than return the
    /// same one.
    pub refused: Option<HeaderValue>,
    /// The `WWW-Authenticate` header of that refusal, if it had one.
    pub challenge: Option<HeaderValue>,
    /// The status of that refusal (401 or 403), when this call is the retry after one; set
    /// even when the refused request carried no `Authorization` at all.
    pub status: Option<StatusCode>,
}

impl AuthContext {
    /// Whether the server refused the previous request, with or without a value (so a fresh
    /// one is wanted).
    pub fn is_retry(&self) -> bool {
        self.refused.is_some() || self.status.is_some()
    }
}

impl fmt::Debug for AuthContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A refused token is still a secret: show only that there was one.
        f.debug_struct("AuthContext")
            .field("refused", &self.refused.as_ref().map(|_| "<redacted>"))
            .field("challenge", &self.challenge)
            .field("status", &self.status)
            .finish()
    }
}

/// The request a proof of possession is asked for ([`AuthProvider::proof`]): what a DPoP proof
/// (RFC 9449) signs.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ProofContext<'a> {
    /// The request's method (the proof's `htm`).
    pub method: &'a Method,
    /// The request's URL (the proof's `htu`, once its query and fragment are dropped).
    pub uri: &'a Uri,
    /// The `Authorization` value the request carries, whose token the proof's `ath` hashes.
    pub authorization: Option<&'a HeaderValue>,
    /// The last `DPoP-Nonce` the server sent, for the proof's `nonce`.
    pub nonce: Option<&'a HeaderValue>,
}

impl<'a> ProofContext<'a> {
    /// The context of a request with `method` to `uri`, carrying `authorization`, the server
    /// having sent `nonce` last.
    pub fn new(
        method: &'a Method,
        uri: &'a Uri,
        authorization: Option<&'a HeaderValue>,
        nonce: Option<&'a HeaderValue>,
    ) -> ProofContext<'a> {
        ProofContext {
            method,
            uri,
            authorization,
            nonce,
        }
    }
}

impl fmt::Debug for ProofContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProofContext")
            .field("method", self.method)
            .field("uri", self.uri)
            .field("authorization", &self.authorization.map(|_| "<redacted>"))
            .field("nonce", &self.nonce)
            .finish()
    }
}

/// Supplies the `Authorization` header, asked before every request the transport makes (C9).
///
/// Return `Ok(None)` to send the request without the header (or with the one set by
/// [`ClientBuilder::header`](crate::ClientBuilder::header)). When the server answers 401, or 403
/// with `error="insufficient_scope"` in its `WWW-Authenticate` (a step-up: the token lacks a
/// scope), the provider is asked once more with [`AuthContext::status`] set, and the request is
/// sent again if it returns a different value: once after a 401 and once after such a 403, so
/// a token granted after a 401 may still be stepped up. A second refusal of either kind is the
/// caller's error, with its status and body. An error from the provider fails the request (see [`Error::is_auth`](crate::Error::is_auth)).
///
/// A provider of sender-constrained tokens also gives each request its `DPoP` proof
/// ([`proof`](AuthProvider::proof)), made anew for every try. The transport keeps the last
/// `DPoP-Nonce` the server sent for the proofs that follow, and a 401 whose challenge says
/// `error="use_dpop_nonce"` and carries a `DPoP-Nonce` is tried again once, with the same
/// `Authorization` and a proof carrying the nonce (RFC 9449, section 9), before the 401 retry
/// above.
///
/// Closures taking an [`AuthContext`] and returning a future implement it:
///
/// ```
/// use http::{HeaderValue, Method, StatusCode, Uri};
/// use mcp_streamable_client::{AuthContext, BoxError, Client};
///
/// let client = Client::builder("https://mcp.example.com/mcp")
///     .auth(|ctx: AuthContext| async move {
///         // A real provider would refresh the token when `ctx.is_retry()`.
///         let token = if ctx.is_retry() { "fresh" } else { "cached" };
///         Ok::<_, BoxError>(Some(HeaderValue::from_str(&format!("Bearer {token}"))?))
///     })
///     .build()?;
/// # drop(client);
/// # Ok::<(), mcp_streamable_client::Error>(())
/// ```
pub trait AuthProvider: Send + Sync + 'static {
    /// The `Authorization` value for the next request.
    fn authorization(&self, context: AuthContext) -> AuthFuture;

    /// The `DPoP` header of one request (RFC 9449): a proof of possession of the key the
    /// token is bound to, made for this request's method and URL and the `Authorization` it
    /// carries. Asked before each try, after [`authorization`](AuthProvider::authorization);
    /// `Ok(None)`, the default, sends none. An error fails the request.
    fn proof(&self, context: &ProofContext<'_>) -> Result<Option<HeaderValue>, BoxError> {
        let _ = context;
        Ok(None)
    }
}

impl<F, Fut> AuthProvider for F
where
    F: Fn(AuthContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Option<HeaderValue>, BoxError>> + Send + 'static,
{
    fn authorization(&self, context: AuthContext) -> AuthFuture {
        Box::pin(self(context))
    }
}
