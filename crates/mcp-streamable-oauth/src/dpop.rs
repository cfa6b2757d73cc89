//! DPoP (RFC 9449): the key a client proves possession of, and the proofs it signs with it,
//! one per request.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use url::Url;

use crate::error::{Error, ErrorKind};
use crate::pkce::random_token;
use crate::secret::Secret;

/// The `typ` of a proof (RFC 9449, section 4.2).
const PROOF_TYPE: &str = "dpop+jwt";
/// How many random scalars [`DpopKey::generate`] tries: one out of 2^32 is not a valid P-256
/// scalar, so the second try is already never needed.
const GENERATE_TRIES: usize = 4;

/// The key a client binds its tokens to with DPoP (RFC 9449): an ES256 (P-256) key pair. The
/// authorization server binds the tokens it issues to the key's public half; each request then
/// carries a proof signed with it, so a stolen token is useless without the key.
///
/// A [`TokenStore`](crate::TokenStore) keeps the key with the tokens bound to it ([`Tokens`]'s
/// `dpop_key`): a stored token stays usable with its key. It serializes as its PKCS#8 PEM, a
/// plain string, so store it where secrets belong; its `Debug` shows only its thumbprint.
///
/// [`Tokens`]: crate::Tokens
#[derive(Clone, Serialize, Deserialize)]
#[serde(try_from = "StoredKey", into = "StoredKey")]
pub struct DpopKey {
    pem: Secret,
    key: EncodingKey,
    /// The public half, as proofs embed it.
    jwk: Jwk,
}

/// How a [`DpopKey`] is stored: its algorithm and PKCS#8 PEM.
#[derive(Serialize, Deserialize)]
struct StoredKey {
    alg: String,
    pem: Secret,
}

impl DpopKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<DpopKey, Error> {
        for _ in 0..GENERATE_TRIES {
            let mut scalar = [0u8; 32];
            getrandom::getrandom(&mut scalar).map_err(|e| Error::new(ErrorKind::Config).with(e))?;
            if let Ok(secret) = p256::SecretKey::from_slice(&scalar) {
                let pem = secret
                    .to_pkcs8_pem(LineEnding::LF)
                    .map_err(|e| Error::new(ErrorKind::Config).with(e))?;
                return DpopKey::from_pem(&pem);
            }
        }
        Err(Error::new(ErrorKind::Config).detail("no valid P-256 key drawn"))
    }

    /// A P-256 key from its PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_pem(pem: &str) -> Result<DpopKey, Error> {
        let config = |e: jsonwebtoken::errors::Error| Error::new(ErrorKind::Config).with(e);
        p256::SecretKey::from_pkcs8_pem(pem)
            .map_err(|e| Error::new(ErrorKind::Config).with(e.to_string()))?;
        let key = EncodingKey::from_ec_pem(pem.as_bytes()).map_err(config)?;
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).map_err(config)?;
        Ok(DpopKey {
            pem: Secret::new(pem),
            key,
            jwk,
        })
    }

    /// The key's JWK SHA-256 thumbprint (RFC 7638): what a token bound to it names in
    /// `cnf.jkt`, and the `dpop_jkt` of an authorization request.
    pub fn thumbprint(&self) -> String {
        // The JWK of a P-256 key always has a thumbprint.
        self.jwk
            .thumbprint(ThumbprintHash::SHA256)
            .unwrap_or_default()
    }

    /// A proof for one request (RFC 9449, section 4.2): its method and URL (without query and
    /// fragment), the access token it carries (`ath`) and the server's nonce, if any.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<Secret, Error> {
        #[derive(Serialize)]
        struct Claims<'a> {
            jti: String,
            htm: &'a str,
            htu: String,
            iat: u64,
            #[serde(skip_serializing_if = "Option::is_none")]
            ath: Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            nonce: Option<&'a str>,
        }
        let claims = Claims {
            jti: random_token()?,
            htm: method,
            htu: target(url)?,
            iat: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ath: access_token.map(token_hash),
            nonce,
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(PROOF_TYPE.into());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map(Secret::new)
            .map_err(|e| Error::new(ErrorKind::Config).with(e))
    }
}

/// The `htu` of a request to `url`: the URL without its query and fragment.
fn target(url: &str) -> Result<String, Error> {
    let mut url = Url::parse(url).map_err(|e| Error::new(ErrorKind::Config).with(e))?;
    url.set_query(None);
    url.set_fragment(None);
    Ok(url.into())
}

/// The `ath` of an access token: base64url(SHA-256(token)) (RFC 9449, section 4.2).
fn token_hash(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

impl TryFrom<StoredKey> for DpopKey {
    type Error = Error;

    fn try_from(stored: StoredKey) -> Result<DpopKey, Error> {
        if stored.alg != "ES256" {
            return Err(Error::new(ErrorKind::Config).detail(stored.alg));
        }
        DpopKey::from_pem(stored.pem.expose())
    }
}

impl From<DpopKey> for StoredKey {
    fn from(key: DpopKey) -> StoredKey {
        StoredKey {
            alg: "ES256".into(),
            pem: key.pem,
        }
    }
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("algorithm", &Algorithm::ES256)
            .field("thumbprint", &self.thumbprint())
            .field("key", &"<redacted>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{DecodingKey, Validation, decode, decode_header};

    use super::*;

    fn verify(proof: &str) -> (Header, serde_json::Value) {
        let header = decode_header(proof).unwrap();
        let key = DecodingKey::from_jwk(header.jwk.as_ref().unwrap()).unwrap();
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let claims = decode::<serde_json::Value>(proof, &key, &validation).unwrap();
        (header, claims.claims)
    }

    #[test]
    fn a_proof_is_signed_by_the_embedded_key_and_names_the_request() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                "POST",
                "https://r.example/mcp?x=1#f",
                Some("tok"),
                Some("n1"),
            )
            .unwrap();
        let (header, claims) = verify(proof.expose());
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        assert_eq!(header.alg, Algorithm::ES256);
        let jwk = header.jwk.unwrap();
        assert_eq!(
            jwk.thumbprint(ThumbprintHash::SHA256).unwrap(),
            key.thumbprint()
        );
        assert!(!serde_json::to_string(&jwk).unwrap().contains("\"d\""));
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://r.example/mcp");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(claims["ath"], token_hash("tok"));
        assert_eq!(claims["ath"].as_str().unwrap().len(), 43);
        let now = crate::token::unix_now();
        assert!(claims["iat"].as_u64().unwrap().abs_diff(now) <= 1);
        let again = verify(
            key.proof("POST", "https://r.example/mcp", None, None)
                .unwrap()
                .expose(),
        )
        .1;
        assert_ne!(claims["jti"], again["jti"]);
        assert!(again.get("ath").is_none() && again.get("nonce").is_none());
    }

    #[test]
    fn the_access_token_hash_is_rfc_9449s() {
        // RFC 9449, section 7.1: the example token and its `ath`.
        let token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU";
        assert_eq!(
            token_hash(token),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn keys_keep_through_serde_and_stay_redacted() {
        let key = DpopKey::generate().unwrap();
        let json = serde_json::to_string(&key).unwrap();
        let back: DpopKey = serde_json::from_str(&json).unwrap();
        assert_eq!(back.thumbprint(), key.thumbprint());
        let shown = format!("{key:?}");
        assert!(shown.contains(&key.thumbprint()), "{shown}");
        assert!(!shown.contains("PRIVATE"), "{shown}");
        assert_ne!(DpopKey::generate().unwrap().thumbprint(), key.thumbprint());
        let bad = json.replace("ES256", "RS256");
        assert!(serde_json::from_str::<DpopKey>(&bad).is_err());
        assert_eq!(
            DpopKey::from_pem("junk").unwrap_err().kind(),
            ErrorKind::Config
        );
    }
}
