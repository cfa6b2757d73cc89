//! The key set: fetched over HTTP, parsed into verification keys, nothing else.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Request, StatusCode, Uri, header};
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation,
    jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse},
};
use mcp_http_client::HttpClient;
use serde_json::value::RawValue;

use crate::{error::ConfigError, error::JwksError, error::JwksErrorKind};

/// One verification key and the checks that go with it.
pub(super) struct Entry {
    pub(super) kid: Option<String>,
    pub(super) key: DecodingKey,
    /// Issuer, audience, expiry and this key's algorithms: built once per key, so verifying a
    /// token copies nothing.
    pub(super) validation: Validation,
}

/// Where the key set comes from: the network, or a test's fixed answers.
pub(super) trait Fetch: Send + Sync {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<Bytes, JwksError>> + Send + '_>>;
}

/// Fetches the JWKS document through an [`HttpClient`]: one GET, bounded in time and size.
pub(super) struct HttpFetch {
    url: Uri,
    client: Arc<dyn HttpClient>,
    timeout: Duration,
    max_bytes: usize,
}

impl HttpFetch {
    /// Through `client`, or `mcp-http-client`'s default one, bounded by `timeout` and
    /// `max_bytes`, without keeping connections (a fetch every few minutes at most: a pooled
    /// connection would only sit idle) and reading the platform's roots only for an `https`
    /// URL.
    pub(super) fn new(
        url: Uri,
        client: Option<Arc<dyn HttpClient>>,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Self, ConfigError> {
        let client = match client {
            Some(client) => client,
            None => Arc::new(
                mcp_http_client::Client::builder()
                    .timeout(timeout)
                    .max_body_bytes(max_bytes)
                    .keep_alive(false)
                    .https(url.scheme_str() == Some("https"))
                    .build()
                    .map_err(|_| ConfigError::Tls)?,
            ),
        };
        Ok(HttpFetch {
            url,
            client,
            timeout,
            max_bytes,
        })
    }

    async fn get(&self) -> Result<Bytes, JwksError> {
        let request = Request::get(self.url.clone())
            .header(header::ACCEPT, "application/json")
            .body(Bytes::new())
            .map_err(|e| JwksError::new(JwksErrorKind::Request).with_source(e))?;
        let response = self.client.send(request).await.map_err(|e| {
            let kind = if e.is_timeout() {
                JwksErrorKind::Timeout
            } else if e.is_body_too_large() {
                JwksErrorKind::TooLarge
            } else {
                JwksErrorKind::Request
            };
            JwksError::new(kind).with_source(e)
        })?;
        if response.status() != StatusCode::OK {
            let status = response.status().as_u16();
            return Err(JwksError::new(JwksErrorKind::Status { status }));
        }
        // The bound holds whatever client the application gave.
        if response.body().len() > self.max_bytes {
            return Err(JwksError::new(JwksErrorKind::TooLarge));
        }
        Ok(response.into_body())
    }
}

impl Fetch for HttpFetch {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<Bytes, JwksError>> + Send + '_>> {
        Box::pin(async move {
            tokio::time::timeout(self.timeout, self.get())
                .await
                .unwrap_or_else(|_| Err(JwksError::new(JwksErrorKind::Timeout)))
        })
    }
}

/// Parses a JWKS document into at most `max_keys` verification keys. Keys that cannot verify
/// signatures here are skipped: encryption keys, symmetric (`oct`) keys, whose acceptance would
/// let anyone who knows a public key forge tokens, and unknown types or algorithms.
pub(super) fn parse(
    document: &[u8],
    base: &Validation,
    max_keys: usize,
) -> Result<Vec<Entry>, JwksError> {
    #[derive(serde::Deserialize)]
    struct Document<'a> {
        #[serde(borrow)]
        keys: Vec<&'a RawValue>,
    }
    let document: Document<'_> = serde_json::from_slice(document)
        .map_err(|e| JwksError::new(JwksErrorKind::Parse).with_source(e))?;
    let mut entries = Vec::new();
    for raw in document.keys {
        if entries.len() == max_keys {
            tracing::warn!(
                max_keys,
                "jwks holds more keys than the limit; the rest are ignored"
            );
            break;
        }
        let jwk: Jwk = match serde_json::from_str(raw.get()) {
            Ok(jwk) => jwk,
            Err(e) => {
                tracing::debug!(error = %e, "jwks key skipped: not a key this verifier reads");
                continue;
            }
        };
        let Some(algorithms) = algorithms(&jwk) else {
            tracing::debug!(kid = ?jwk.common.key_id, "jwks key skipped: not a signature key");
            continue;
        };
        let key = match DecodingKey::from_jwk(&jwk) {
            Ok(key) => key,
            Err(e) => {
                tracing::debug!(kid = ?jwk.common.key_id, error = %e, "jwks key skipped");
                continue;
            }
        };
        let mut validation = base.clone();
        validation.algorithms = algorithms;
        entries.push(Entry {
            kid: jwk.common.key_id,
            key,
            validation,
        });
    }
    if entries.is_empty() {
        return Err(JwksError::new(JwksErrorKind::NoUsableKeys));
    }
    Ok(entries)
}

/// The asymmetric algorithms a key may verify: its `alg` when it names one, else those of its
/// type and curve. `None` for a key that must not verify anything.
fn algorithms(jwk: &Jwk) -> Option<Vec<Algorithm>> {
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|usage| *usage != PublicKeyUse::Signature)
    {
        return None;
    }
    let by_type: &[Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => &[
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(params) => match params.curve {
            EllipticCurve::Ed25519 => &[Algorithm::EdDSA],
            _ => return None,
        },
        // Symmetric and unknown key types.
        _ => return None,
    };
    let Some(named) = &jwk.common.key_algorithm else {
        return Some(by_type.to_vec());
    };
    let named = match named {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    };
    // An `alg` that does not fit the key's type is a broken key, not a hint to follow.
    by_type.contains(&named).then(|| vec![named])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture's first RSA key as a JWK with `kid` "r".
    fn rsa() -> String {
        let public: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/public.json")).unwrap();
        let mut key = public["rsa1"].clone();
        key["kid"] = "r".into();
        key.to_string()
    }

    fn kids(document: &str, max_keys: usize) -> Result<Vec<Option<String>>, JwksErrorKind> {
        parse(
            document.as_bytes(),
            &Validation::new(Algorithm::RS256),
            max_keys,
        )
        .map(|entries| entries.into_iter().map(|e| e.kid).collect())
        .map_err(|e| e.kind())
    }

    #[test]
    fn unusable_keys_are_skipped() {
        let document = format!(
            r#"{{"keys":[
                {{"kty":"oct","kid":"secret","k":"c2VjcmV0"}},
                {{"kty":"RSA","kid":"enc","use":"enc","n":"AQAB","e":"AQAB"}},
                {{"kty":"RSA","kid":"hs","alg":"HS256","n":"AQAB","e":"AQAB"}},
                {{"kty":"RSA","kid":"es","alg":"ES256","n":"AQAB","e":"AQAB"}},
                {{"kty":"XYZ","kid":"unknown"}},
                "not a key",
                {}
            ]}}"#,
            rsa()
        );
        assert_eq!(kids(&document, 10), Ok(vec![Some("r".to_owned())]));
    }

    #[test]
    fn algorithms_follow_the_key() {
        let jwk = |text: &str| serde_json::from_str::<Jwk>(text).unwrap();
        assert_eq!(algorithms(&jwk(&rsa())).unwrap().len(), 6);
        let named = rsa().replace(r#""kid":"r""#, r#""kid":"r","alg":"PS256""#);
        assert_eq!(algorithms(&jwk(&named)), Some(vec![Algorithm::PS256]));
        let ec = r#"{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}"#;
        assert_eq!(algorithms(&jwk(ec)), Some(vec![Algorithm::ES256]));
    }

    #[test]
    fn limits_and_bad_documents() {
        let two = format!(
            r#"{{"keys":[{},{}]}}"#,
            rsa(),
            rsa().replace(r#""r""#, r#""s""#)
        );
        assert_eq!(kids(&two, 1), Ok(vec![Some("r".to_owned())]));
        assert_eq!(kids(&two, 2).unwrap().len(), 2);
        assert_eq!(kids(r#"{"keys":[]}"#, 2), Err(JwksErrorKind::NoUsableKeys));
        assert_eq!(kids(r#"{"nokeys":1}"#, 2), Err(JwksErrorKind::Parse));
        assert_eq!(kids("<html>", 2), Err(JwksErrorKind::Parse));
    }
}
