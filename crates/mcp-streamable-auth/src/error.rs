//! The errors of this crate: a verifier's [`TokenError`], the guard's [`Refusal`] (which knows
//! its HTTP response), [`ConfigError`] for settings refused at build time and, with the `jwt`
//! feature, [`JwksError`] for a key set that could not be fetched.

use std::{error::Error, fmt};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Response, StatusCode, header};
use http_body_util::Full;

type BoxError = Box<dyn Error + Send + Sync>;

/// Why a [`TokenVerifier`](crate::TokenVerifier) did not accept a token.
///
/// The kind decides the answer the client gets; the optional source is for the server's logs
/// only and never reaches the client.
///
/// ```
/// use mcp_streamable_auth::{TokenError, TokenErrorKind};
///
/// let error = TokenError::new(TokenErrorKind::Expired);
/// assert_eq!(error.kind(), TokenErrorKind::Expired);
/// assert_eq!(error.to_string(), "access token expired");
/// ```
#[derive(Debug)]
pub struct TokenError {
    kind: TokenErrorKind,
    source: Option<BoxError>,
}

/// What was wrong with a token, as far as the client needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenErrorKind {
    /// Not a token this server accepts: unreadable, a bad signature, an unknown key, a wrong
    /// issuer, a disallowed algorithm, a missing claim, revoked.
    Invalid,
    /// The token was valid once and has expired.
    Expired,
    /// The token was not issued for this resource (RFC 8707): its audience does not include
    /// the resource URL.
    WrongAudience,
    /// The verifier could not decide, for a fault of its own or of a service it depends on
    /// (the authorization server's keys could not be fetched). The client is not to blame, so
    /// it gets a 503 and not a 401 that would send it to authorize again.
    Unavailable,
}

impl TokenError {
    /// An error of this kind, without a source.
    pub fn new(kind: TokenErrorKind) -> TokenError {
        TokenError { kind, source: None }
    }

    /// Attaches the underlying error, for the logs (`Error::source`).
    pub fn with_source(mut self, source: impl Into<BoxError>) -> TokenError {
        self.source = Some(source.into());
        self
    }

    /// What was wrong with the token.
    pub fn kind(&self) -> TokenErrorKind {
        self.kind
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            TokenErrorKind::Invalid => "access token invalid",
            TokenErrorKind::Expired => "access token expired",
            TokenErrorKind::WrongAudience => "access token not issued for this resource",
            TokenErrorKind::Unavailable => "token verifier unavailable",
        })
    }
}

impl Error for TokenError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

impl From<TokenErrorKind> for TokenError {
    fn from(kind: TokenErrorKind) -> TokenError {
        TokenError::new(kind)
    }
}

/// Why the [`Guard`](crate::Guard) refused a request, with the response that says so.
///
/// [`Refusal::to_response`] is the answer the MCP specification asks for: a 401 with a
/// `WWW-Authenticate: Bearer` challenge pointing at the protected resource metadata, or a 403
/// with `error="insufficient_scope"` and the scopes needed, and a small JSON body.
#[derive(Debug)]
pub struct Refusal {
    kind: RefusalKind,
    challenge: Option<HeaderValue>,
    nonce: Option<HeaderValue>,
    source: Option<BoxError>,
}

/// The reason for a [`Refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalKind {
    /// No `Authorization` header with the `Bearer` scheme: none at all, or another scheme such
    /// as `Basic`. The challenge carries no error code (RFC 6750 §3.1).
    MissingToken,
    /// Bearer credentials that cannot be a token: empty, characters outside `token68`, or two
    /// `Authorization` headers.
    MalformedToken,
    /// The verifier refused the token ([`TokenErrorKind::Invalid`]).
    InvalidToken,
    /// The token has expired.
    ExpiredToken,
    /// The token was issued for another resource.
    WrongAudience,
    /// The token is valid but lacks a scope the resource requires: a 403.
    InsufficientScope,
    /// The verifier could not decide: a 503, without a challenge.
    Unavailable,
    /// The DPoP proof is missing, malformed or does not fit the request (RFC 9449 §7.1,
    /// `error="invalid_dpop_proof"`): a bad signature, another method or URL, an `iat` out of
    /// the window, a `jti` used before, a wrong `ath`.
    InvalidDpopProof,
    /// The DPoP proof lacks a nonce this server gave, or its nonce is stale (RFC 9449 §9,
    /// `error="use_dpop_nonce"`): the answer carries a fresh one in `DPoP-Nonce`.
    UseDpopNonce,
    /// The token's key binding does not fit how it was presented: a token bound to a key
    /// (`cnf.jkt`) sent as `Bearer`, a token bound to none sent as `DPoP`, or a proof signed by
    /// another key than the token's.
    TokenBinding,
}

impl RefusalKind {
    /// The `error` code of RFC 6750 §3.1, where one applies.
    pub(crate) fn code(self) -> Option<&'static str> {
        match self {
            RefusalKind::MissingToken | RefusalKind::Unavailable => None,
            RefusalKind::MalformedToken
            | RefusalKind::InvalidToken
            | RefusalKind::ExpiredToken
            | RefusalKind::WrongAudience
            | RefusalKind::TokenBinding => Some("invalid_token"),
            RefusalKind::InsufficientScope => Some("insufficient_scope"),
            RefusalKind::InvalidDpopProof => Some("invalid_dpop_proof"),
            RefusalKind::UseDpopNonce => Some("use_dpop_nonce"),
        }
    }

    /// The `error_description`: fixed text, so that nothing a client sent is echoed back and the
    /// characters stay within what RFC 6750 allows (no `"` nor `\`).
    pub(crate) fn description(self) -> &'static str {
        match self {
            RefusalKind::MissingToken => "the request has no bearer token",
            RefusalKind::MalformedToken => "the bearer credentials are malformed",
            RefusalKind::InvalidToken => "the access token is invalid",
            RefusalKind::ExpiredToken => "the access token expired",
            RefusalKind::WrongAudience => "the access token was not issued for this resource",
            RefusalKind::InsufficientScope => "the access token lacks a required scope",
            RefusalKind::Unavailable => "the token could not be verified now; retry later",
            RefusalKind::InvalidDpopProof => "the DPoP proof is invalid",
            RefusalKind::UseDpopNonce => "the DPoP proof needs the nonce this server provides",
            RefusalKind::TokenBinding => {
                "the access token's key binding does not match the request"
            }
        }
    }

    /// Whether the answer carries a `WWW-Authenticate` challenge.
    pub(crate) fn has_challenge(self) -> bool {
        self != RefusalKind::Unavailable
    }

    /// The refusal for a verifier's error.
    pub(crate) fn of_token_error(kind: TokenErrorKind) -> RefusalKind {
        match kind {
            TokenErrorKind::Expired => RefusalKind::ExpiredToken,
            TokenErrorKind::WrongAudience => RefusalKind::WrongAudience,
            TokenErrorKind::Unavailable => RefusalKind::Unavailable,
            TokenErrorKind::Invalid => RefusalKind::InvalidToken,
        }
    }

    /// Every kind, for building the challenges once.
    pub(crate) const ALL: [RefusalKind; 10] = [
        RefusalKind::MissingToken,
        RefusalKind::MalformedToken,
        RefusalKind::InvalidToken,
        RefusalKind::ExpiredToken,
        RefusalKind::WrongAudience,
        RefusalKind::InsufficientScope,
        RefusalKind::Unavailable,
        RefusalKind::InvalidDpopProof,
        RefusalKind::UseDpopNonce,
        RefusalKind::TokenBinding,
    ];
}

impl Refusal {
    pub(crate) fn new(kind: RefusalKind, challenge: Option<HeaderValue>) -> Refusal {
        Refusal {
            kind,
            challenge,
            nonce: None,
            source: None,
        }
    }

    pub(crate) fn with_source(mut self, source: impl Into<BoxError>) -> Refusal {
        self.source = Some(source.into());
        self
    }

    /// Sends `nonce` in `DPoP-Nonce`, for the client's next proofs.
    #[cfg(feature = "dpop")]
    pub(crate) fn with_nonce(mut self, nonce: Option<HeaderValue>) -> Refusal {
        self.nonce = nonce;
        self
    }

    /// The reason.
    pub fn kind(&self) -> RefusalKind {
        self.kind
    }

    /// The HTTP status of the answer: 403 for a missing scope, 503 when the verifier could not
    /// decide, 401 otherwise.
    pub fn status(&self) -> StatusCode {
        match self.kind {
            RefusalKind::InsufficientScope => StatusCode::FORBIDDEN,
            RefusalKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            RefusalKind::MissingToken
            | RefusalKind::MalformedToken
            | RefusalKind::InvalidToken
            | RefusalKind::ExpiredToken
            | RefusalKind::WrongAudience
            | RefusalKind::InvalidDpopProof
            | RefusalKind::UseDpopNonce
            | RefusalKind::TokenBinding => StatusCode::UNAUTHORIZED,
        }
    }

    /// The `WWW-Authenticate` header value, when the answer has one.
    pub fn www_authenticate(&self) -> Option<&HeaderValue> {
        self.challenge.as_ref()
    }

    /// The nonce for the client's next DPoP proofs (`DPoP-Nonce`), when the answer has one.
    pub fn dpop_nonce(&self) -> Option<&HeaderValue> {
        self.nonce.as_ref()
    }

    /// The answer: [`status`](Refusal::status), the challenge, the `DPoP-Nonce` when there is
    /// one, and a JSON body with `error` (when there is a code) and `error_description`.
    ///
    /// ```
    /// # async fn f() {
    /// use std::sync::Arc;
    /// use http::HeaderMap;
    /// use mcp_streamable_auth::{Guard, Principal, TokenError, TokenErrorKind, VerifyFuture};
    ///
    /// struct Nobody;
    /// impl mcp_streamable_auth::TokenVerifier for Nobody {
    ///     fn verify<'a>(&'a self, _token: &'a str) -> VerifyFuture<'a> {
    ///         Box::pin(async { Err(TokenError::new(TokenErrorKind::Invalid)) })
    ///     }
    /// }
    ///
    /// let guard = Guard::builder("https://mcp.example.com/mcp")
    ///     .authorization_server("https://auth.example.com")
    ///     .build(Nobody)
    ///     .unwrap();
    /// let refusal = guard.check(&HeaderMap::new()).await.unwrap_err();
    /// let response = refusal.to_response();
    /// assert_eq!(response.status(), 401);
    /// assert_eq!(
    ///     response.headers()["www-authenticate"],
    ///     r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
    /// );
    /// # }
    /// ```
    pub fn to_response(&self) -> Response<Full<Bytes>> {
        #[derive(serde::Serialize)]
        struct Body {
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'static str>,
            error_description: &'static str,
        }
        let body = Body {
            error: self.kind.code().or(match self.kind {
                RefusalKind::Unavailable => Some("temporarily_unavailable"),
                _ => None,
            }),
            error_description: self.kind.description(),
        };
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = self.status();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(challenge) = &self.challenge {
            headers.insert(header::WWW_AUTHENTICATE, challenge.clone());
        }
        if let Some(nonce) = &self.nonce {
            headers.insert(HeaderName::from_static("dpop-nonce"), nonce.clone());
        }
        response
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request refused: ")?;
        f.write_str(self.kind.description())
    }
}

impl Error for Refusal {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

/// A setting refused when building a [`Guard`](crate::Guard) or, with the `jwt` feature, a
/// [`JwtVerifier`](crate::jwt::JwtVerifier).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The resource is not an absolute `http` or `https` URL with a host and no user info.
    ResourceNotAbsolute,
    /// The resource has a fragment, which RFC 8707 forbids.
    ResourceHasFragment,
    /// The resource has a query. RFC 8707 advises against one, and the well-known URL of its
    /// metadata would then depend on it; identify the MCP endpoint by its path.
    ResourceHasQuery,
    /// No authorization server: the MCP specification requires at least one in the metadata.
    NoAuthorizationServer,
    /// An authorization server is not an absolute `http` or `https` URL.
    InvalidAuthorizationServer {
        /// The value given.
        url: String,
    },
    /// A scope holds characters RFC 6749 §3.3 does not allow (a space, `"`, `\`, controls) or
    /// is empty.
    InvalidScope {
        /// The value given.
        scope: String,
    },
    /// A required scope is missing from `scopes_supported`, so clients would never ask for it.
    RequiredScopeNotSupported {
        /// The required scope.
        scope: String,
    },
    /// A value would make an invalid header (a control character in a name or URL).
    InvalidHeaderValue,
    /// The JWKS URL is not an absolute `http` or `https` URL.
    InvalidJwksUrl,
    /// The JWKS URL is plain `http` to a host other than the loopback: keys fetched that way
    /// could be replaced by anyone on the path.
    InsecureJwksUrl,
    /// The TLS client could not be set up.
    Tls,
    /// The DPoP public origin is not `http` or `https` with a host, and nothing else (no path,
    /// query, fragment or user information).
    InvalidPublicOrigin,
    /// DPoP is configured with no algorithm to accept.
    NoDpopAlgorithm,
    /// The system's random source failed, so no key could be drawn (for DPoP nonces).
    Random,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::ResourceNotAbsolute => {
                f.write_str("resource is not an absolute http or https url")
            }
            ConfigError::ResourceHasFragment => f.write_str("resource has a fragment"),
            ConfigError::ResourceHasQuery => f.write_str("resource has a query"),
            ConfigError::NoAuthorizationServer => f.write_str("no authorization server"),
            ConfigError::InvalidAuthorizationServer { url } => {
                write!(
                    f,
                    "authorization server {url:?} is not an http or https url"
                )
            }
            ConfigError::InvalidScope { scope } => write!(f, "invalid scope {scope:?}"),
            ConfigError::RequiredScopeNotSupported { scope } => {
                write!(f, "required scope {scope:?} is not in scopes_supported")
            }
            ConfigError::InvalidHeaderValue => f.write_str("value not allowed in a header"),
            ConfigError::InvalidJwksUrl => f.write_str("jwks url is not an http or https url"),
            ConfigError::InsecureJwksUrl => {
                f.write_str("jwks url is plain http to a host other than the loopback")
            }
            ConfigError::Tls => f.write_str("tls client could not be set up"),
            ConfigError::InvalidPublicOrigin => {
                f.write_str("public origin is not an http or https origin")
            }
            ConfigError::NoDpopAlgorithm => f.write_str("no dpop algorithm allowed"),
            ConfigError::Random => f.write_str("random source failed"),
        }
    }
}

impl Error for ConfigError {}

/// Why the authorization server's key set (JWKS) could not be used.
///
/// A verifier that meets this error keeps the keys it has; a token it cannot check for want of
/// keys gets [`TokenErrorKind::Unavailable`] with this error as the source.
#[cfg(feature = "jwt")]
#[derive(Debug)]
pub struct JwksError {
    kind: JwksErrorKind,
    source: Option<BoxError>,
}

/// The reason for a [`JwksError`].
#[cfg(feature = "jwt")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwksErrorKind {
    /// The request failed: connection, TLS, protocol.
    Request,
    /// No complete answer within the fetch timeout.
    Timeout,
    /// The answer's status was not 200.
    Status {
        /// The status received.
        status: u16,
    },
    /// The document is larger than the limit.
    TooLarge,
    /// The document is not a JSON key set.
    Parse,
    /// The document holds no key usable for verifying signatures.
    NoUsableKeys,
}

#[cfg(feature = "jwt")]
impl JwksError {
    pub(crate) fn new(kind: JwksErrorKind) -> JwksError {
        JwksError { kind, source: None }
    }

    pub(crate) fn with_source(mut self, source: impl Into<BoxError>) -> JwksError {
        self.source = Some(source.into());
        self
    }

    /// The reason.
    pub fn kind(&self) -> JwksErrorKind {
        self.kind
    }
}

#[cfg(feature = "jwt")]
impl fmt::Display for JwksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            JwksErrorKind::Request => f.write_str("jwks request failed"),
            JwksErrorKind::Timeout => f.write_str("jwks fetch timed out"),
            JwksErrorKind::Status { status } => write!(f, "jwks answered with status {status}"),
            JwksErrorKind::TooLarge => f.write_str("jwks document larger than the limit"),
            JwksErrorKind::Parse => f.write_str("jwks document is not a json key set"),
            JwksErrorKind::NoUsableKeys => f.write_str("jwks document has no usable signing key"),
        }
    }
}

#[cfg(feature = "jwt")]
impl Error for JwksError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

/// A [`ReplayCache`](crate::dpop::ReplayCache) that could not say whether a proof was used
/// before (its storage out of reach, or full): the guard answers 503, since letting the proof
/// through could let a replay through.
#[cfg(feature = "dpop")]
#[derive(Debug, Default)]
pub struct ReplayError {
    source: Option<BoxError>,
}

#[cfg(feature = "dpop")]
impl ReplayError {
    /// An error without a source.
    pub fn new() -> ReplayError {
        ReplayError::default()
    }

    /// Attaches the underlying error, for the logs (`Error::source`).
    pub fn with_source(mut self, source: impl Into<BoxError>) -> ReplayError {
        self.source = Some(source.into());
        self
    }
}

#[cfg(feature = "dpop")]
impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("replay cache unavailable")
    }
}

#[cfg(feature = "dpop")]
impl Error for ReplayError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_stay_within_the_rfc_6750_characters() {
        for kind in RefusalKind::ALL {
            let text = kind.description();
            assert!(
                text.bytes().all(|b| b == 0x20
                    || b == 0x21
                    || (0x23..=0x5b).contains(&b)
                    || (0x5d..=0x7e).contains(&b)),
                "{kind:?}: {text}"
            );
        }
    }

    #[test]
    fn statuses_and_bodies() {
        let rows = [
            (
                RefusalKind::MissingToken,
                401,
                r#"{"error_description":"the request has no bearer token"}"#,
            ),
            (
                RefusalKind::InvalidToken,
                401,
                r#"{"error":"invalid_token","error_description":"the access token is invalid"}"#,
            ),
            (
                RefusalKind::WrongAudience,
                401,
                r#"{"error":"invalid_token","error_description":"the access token was not issued for this resource"}"#,
            ),
            (
                RefusalKind::InsufficientScope,
                403,
                r#"{"error":"insufficient_scope","error_description":"the access token lacks a required scope"}"#,
            ),
            (
                RefusalKind::Unavailable,
                503,
                r#"{"error":"temporarily_unavailable","error_description":"the token could not be verified now; retry later"}"#,
            ),
        ];
        for (kind, status, body) in rows {
            let challenge = kind
                .has_challenge()
                .then(|| HeaderValue::from_static("Bearer"));
            let refusal = Refusal::new(kind, challenge);
            let response = refusal.to_response();
            assert_eq!(response.status(), status, "{kind:?}");
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
            assert_eq!(
                response.headers().contains_key(header::WWW_AUTHENTICATE),
                kind != RefusalKind::Unavailable
            );
            let bytes = futures_body(response.into_body());
            assert_eq!(bytes, body, "{kind:?}");
        }
    }

    fn futures_body(body: Full<Bytes>) -> String {
        use http_body::Body;
        let mut body = std::pin::pin!(body);
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        match body.as_mut().poll_frame(&mut cx) {
            std::task::Poll::Ready(Some(Ok(frame))) => {
                String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
            }
            _ => String::new(),
        }
    }

    #[test]
    fn token_error_keeps_its_source() {
        let error = TokenError::new(TokenErrorKind::Invalid).with_source("bad signature");
        assert_eq!(error.source().unwrap().to_string(), "bad signature");
        let refusal = Refusal::new(RefusalKind::InvalidToken, None).with_source(error);
        assert_eq!(
            refusal.source().unwrap().to_string(),
            "access token invalid"
        );
    }
}
