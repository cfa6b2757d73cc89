//! Tokens and the token endpoint: the request with the client's authentication (RFC 6749,
//! section 2.3; RFC 7523 for `private_key_jwt`) and its DPoP proof (RFC 9449, section 5), and
//! the answer (section 5).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::HeaderValue;
use http::header::AUTHORIZATION;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::dpop::DpopKey;
use crate::error::{Error, ErrorKind};
use crate::http::{Answer, Http, check_secure};
use crate::metadata::ServerMetadata;
use crate::pkce::random_token;
use crate::registration::{PrivateKeyJwt, Registration};
use crate::secret::Secret;

/// How long a client assertion is valid: RFC 7523 asks for a short life; a minute covers clock
/// skew and the request.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(60);

use mcp_streamable_protocol::headers::{DPOP, DPOP_NONCE};

/// The tokens held for a resource, as a [`TokenStore`](crate::TokenStore) keeps them.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tokens {
    /// The access token sent to the resource.
    pub access_token: Secret,
    /// The refresh token, if the server gave one.
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch, if the server said.
    pub expires_at: Option<u64>,
    /// The scope granted (or, if the server did not say, the one asked for).
    pub scope: Option<String>,
    /// The authorization server that issued them: tokens of another are never sent to it.
    pub issuer: String,
    /// The key the access token is bound to, for a DPoP token (`token_type` `DPoP`, sent as
    /// `Authorization: DPoP`, each request with a proof signed by it); `None` for a bearer
    /// token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<DpopKey>,
}

impl Tokens {
    /// Whether the access token expires within `margin` from now.
    pub(crate) fn expires_within(&self, margin: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| at <= unix_now().saturating_add(margin.as_secs()))
    }

    /// The `Authorization` header value: `DPoP` for a token bound to a key, else `Bearer`.
    pub(crate) fn header(&self) -> Result<HeaderValue, Error> {
        let scheme = if self.dpop_key.is_some() {
            "DPoP"
        } else {
            "Bearer"
        };
        let token = self.access_token.expose();
        let mut value = HeaderValue::from_str(&format!("{scheme} {token}"))
            .map_err(|e| Error::new(ErrorKind::Token).with(e))?;
        value.set_sensitive(true);
        Ok(value)
    }

    /// The scopes, one by one.
    pub(crate) fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scope.iter().flat_map(|s| s.split_whitespace())
    }
}

/// The answer of a token endpoint (RFC 6749, section 5.1).
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// An error answer (RFC 6749, section 5.2).
#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
}

/// The OAuth error code of a refused token request (`invalid_client`, `invalid_grant`, ...).
pub(crate) fn refusal(error: &Error) -> Option<&str> {
    (error.kind() == ErrorKind::Token)
        .then(|| error.detail_text())
        .flatten()
}

/// The client, as it authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    None,
    Basic,
    Post,
    PrivateKeyJwt,
}

impl Method {
    /// The method for a client: the one it registered with, else the best the server takes.
    pub(crate) fn choose(
        registration: &Registration,
        key: Option<&PrivateKeyJwt>,
        server: &ServerMetadata,
    ) -> Method {
        let has_secret = registration.client_secret.is_some();
        match registration.token_endpoint_auth_method.as_deref() {
            Some("none") => return Method::None,
            Some("client_secret_basic") if has_secret => return Method::Basic,
            Some("client_secret_post") if has_secret => return Method::Post,
            Some("private_key_jwt") if key.is_some() => return Method::PrivateKeyJwt,
            _ => {}
        }
        if key.is_some() && server.supports_auth_method("private_key_jwt") {
            Method::PrivateKeyJwt
        } else if has_secret && server.supports_auth_method("client_secret_basic") {
            Method::Basic
        } else if has_secret && server.supports_auth_method("client_secret_post") {
            Method::Post
        } else if key.is_some() {
            Method::PrivateKeyJwt
        } else if has_secret {
            Method::Basic
        } else {
            Method::None
        }
    }
}

/// A token request: the grant's own parameters; the client's authentication is added here.
pub(crate) struct TokenRequest<'a> {
    pub(crate) http: &'a Http,
    pub(crate) server: &'a ServerMetadata,
    pub(crate) registration: &'a Registration,
    pub(crate) key: Option<&'a PrivateKeyJwt>,
    /// The scope asked for, kept when the server does not echo one.
    pub(crate) scope: Option<&'a str>,
    /// The key to bind the tokens to with DPoP, if any.
    pub(crate) dpop: Option<&'a DpopKey>,
}

impl TokenRequest<'_> {
    /// Sends the grant and reads the tokens.
    pub(crate) async fn send(&self, grant: &[(&str, &str)]) -> Result<Tokens, Error> {
        self.tokens(self.answer(grant).await?.json()?)
    }

    /// Sends the grant and returns the server's answer, a success (else the refusal's error
    /// code as an error); once more with the server's nonce when it asks for one (RFC 9449,
    /// section 8).
    pub(crate) async fn answer(&self, grant: &[(&str, &str)]) -> Result<Answer, Error> {
        let endpoint = Url::parse(&self.server.token_endpoint)
            .map_err(|e| Error::new(ErrorKind::Discovery).with(e))?;
        check_secure(&endpoint)?;
        let mut answer = self.post(&endpoint, grant, None).await?;
        if let Some(nonce) = self.nonce_asked(&answer) {
            tracing::debug!(endpoint = %endpoint, "the server asked for a DPoP nonce");
            answer = self.post(&endpoint, grant, Some(&nonce)).await?;
        }
        if !answer.status.is_success() {
            return Err(Error::new(ErrorKind::Token).detail(refusal_code(&answer)));
        }
        Ok(answer)
    }

    /// One try: the grant with the client's authentication (a fresh assertion each time, as
    /// its `jti` is single-use) and, with a DPoP key, a proof.
    async fn post(
        &self,
        endpoint: &Url,
        grant: &[(&str, &str)],
        nonce: Option<&str>,
    ) -> Result<Answer, Error> {
        let method = Method::choose(self.registration, self.key, self.server);
        let id = self.registration.client_id.as_str();
        let mut form: Vec<(&str, &str)> = grant.to_vec();
        let assertion;
        let mut headers = Vec::new();
        match method {
            Method::None => form.push(("client_id", id)),
            Method::Basic => headers.push((AUTHORIZATION, basic(self.registration)?)),
            Method::Post => {
                form.push(("client_id", id));
                if let Some(secret) = &self.registration.client_secret {
                    form.push(("client_secret", secret.expose()));
                }
            }
            Method::PrivateKeyJwt => {
                let key = self.key.ok_or_else(|| Error::new(ErrorKind::Config))?;
                assertion = key.assertion(id, &self.server.issuer)?;
                form.push(("client_id", id));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                ));
                form.push(("client_assertion", assertion.expose()));
            }
        }
        if let Some(key) = self.dpop {
            let proof = key.proof("POST", endpoint.as_str(), None, nonce)?;
            headers.push((DPOP, sensitive(proof.expose())?));
        }
        tracing::debug!(endpoint = %endpoint, ?method, grant = grant[0].1, "token request");
        self.http.post_form(endpoint, &form, headers).await
    }

    /// The nonce of a refusal that asks for one, when the request carried a proof.
    fn nonce_asked(&self, answer: &Answer) -> Option<String> {
        let nonce = answer.headers.get(DPOP_NONCE)?.to_str().ok()?;
        (self.dpop.is_some()
            && answer.status.is_client_error()
            && refusal_code(answer) == "use_dpop_nonce")
            .then(|| nonce.to_owned())
    }

    /// The tokens of a success: a DPoP token is bound to the key its request proved, a bearer
    /// token to none (a server without DPoP ignores the proof).
    fn tokens(&self, answer: TokenAnswer) -> Result<Tokens, Error> {
        let dpop_key = match answer.token_type.to_ascii_lowercase().as_str() {
            "bearer" => None,
            "dpop" if self.dpop.is_some() => self.dpop.cloned(),
            _ => return Err(Error::new(ErrorKind::Token).detail(answer.token_type)),
        };
        Ok(Tokens {
            access_token: Secret::new(answer.access_token),
            refresh_token: answer.refresh_token.map(Secret::new),
            expires_at: answer.expires_in.map(|s| unix_now().saturating_add(s)),
            scope: answer.scope.or_else(|| self.scope.map(str::to_owned)),
            issuer: self.server.issuer.clone(),
            dpop_key,
        })
    }
}

/// The OAuth error code of a refused token request, else its status.
fn refusal_code(answer: &Answer) -> String {
    serde_json::from_slice::<ErrorAnswer>(&answer.body)
        .map(|e| e.error)
        .unwrap_or_else(|_| answer.status.to_string())
}

/// A header value that holds a secret: never shown by hyper's `Debug`.
fn sensitive(value: &str) -> Result<HeaderValue, Error> {
    let mut value =
        HeaderValue::from_str(value).map_err(|e| Error::new(ErrorKind::Config).with(e))?;
    value.set_sensitive(true);
    Ok(value)
}

/// `client_secret_basic`: id and secret form-encoded, then base64 (RFC 6749, section 2.3.1).
fn basic(registration: &Registration) -> Result<HeaderValue, Error> {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let secret = registration
        .client_secret
        .as_ref()
        .map_or("", |s| s.expose());
    let pair = format!("{}:{}", encode(&registration.client_id), encode(secret));
    sensitive(&format!("Basic {}", STANDARD.encode(pair)))
}

impl PrivateKeyJwt {
    /// A client assertion (RFC 7523, section 3): issued by and about the client, for the
    /// authorization server's issuer.
    fn assertion(&self, client_id: &str, audience: &str) -> Result<Secret, Error> {
        #[derive(Serialize)]
        struct Claims<'a> {
            iss: &'a str,
            sub: &'a str,
            aud: &'a str,
            iat: u64,
            exp: u64,
            jti: String,
        }
        let now = unix_now();
        let claims = Claims {
            iss: client_id,
            sub: client_id,
            aud: audience,
            iat: now,
            exp: now + ASSERTION_LIFETIME.as_secs(),
            jti: random_token()?,
        };
        self.sign(&claims)
    }
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(methods: Option<&[&str]>) -> ServerMetadata {
        let mut server = ServerMetadata::fallback("https://as.example");
        server.token_endpoint_auth_methods_supported =
            methods.map(|m| m.iter().map(|s| s.to_string()).collect());
        server
    }

    fn registration(secret: bool, method: Option<&str>) -> Registration {
        let mut registration = Registration::new("client");
        registration.client_secret = secret.then(|| Secret::new("s3cret"));
        registration.token_endpoint_auth_method = method.map(str::to_owned);
        registration
    }

    #[test]
    fn the_method_follows_the_registration_then_the_server() {
        let choose =
            |secret, method, server| Method::choose(&registration(secret, method), None, &server);
        assert_eq!(
            choose(true, Some("client_secret_post"), server(None)),
            Method::Post
        );
        assert_eq!(choose(true, Some("none"), server(None)), Method::None);
        assert_eq!(choose(true, None, server(None)), Method::Basic);
        assert_eq!(
            choose(true, None, server(Some(&["client_secret_post"]))),
            Method::Post
        );
        assert_eq!(
            choose(false, None, server(Some(&["client_secret_basic"]))),
            Method::None
        );
    }

    #[test]
    fn basic_form_encodes_before_base64() {
        let mut registration = registration(true, None);
        registration.client_id = "a:b".into();
        registration.client_secret = Some(Secret::new("p w"));
        let value = basic(&registration).unwrap();
        assert!(value.is_sensitive());
        let encoded = value.to_str().unwrap().strip_prefix("Basic ").unwrap();
        assert_eq!(STANDARD.decode(encoded).unwrap(), b"a%3Ab:p+w");
    }

    #[test]
    fn expiry_is_judged_with_a_margin() {
        let tokens = |expires_at| Tokens {
            access_token: Secret::new("t"),
            refresh_token: None,
            expires_at,
            scope: Some("a b".into()),
            issuer: "https://as.example".into(),
            dpop_key: None,
        };
        let margin = Duration::from_secs(60);
        assert!(tokens(Some(unix_now() + 30)).expires_within(margin));
        assert!(!tokens(Some(unix_now() + 3600)).expires_within(margin));
        assert!(!tokens(None).expires_within(margin));
        assert_eq!(tokens(None).scopes().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(
            format!("{:?}", tokens(None)).matches("<redacted>").count(),
            1
        );
    }
}
