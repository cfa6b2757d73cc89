//! A proof's header, which names its algorithm and carries its public key: checked and parsed
//! once per distinct header, then kept, since a client sends the same header with every proof.
//!
//! Keeping it weakens nothing: the header's bytes decide what it parses to, the signature is
//! still checked on every proof, and the claims (`jti`, `iat`, `htu`...) are never kept.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, ThumbprintHash};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::config::Algorithm;
use super::error::ProofError;
use super::signature::PublicKey;

/// The members of a JWK that belong to a private key (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037
/// §2): a proof carrying one was made by a client that leaks its key, or is not a public key.
const PRIVATE_MEMBERS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// RSA keys shorter than this are refused (NIST SP 800-57: 2048 bits at least).
const MIN_RSA_MODULUS_BYTES: usize = 256;

/// The key of a proof header, ready to verify signatures.
pub(crate) struct ProofKey {
    /// The JWK SHA-256 thumbprint (RFC 7638), base64url.
    pub(crate) jkt: Arc<str>,
    pub(crate) key: PublicKey,
}

#[derive(Deserialize)]
struct Header {
    typ: Option<String>,
    alg: String,
    jwk: Option<Map<String, Value>>,
    crit: Option<Value>,
}

/// Checks a proof's encoded header (RFC 9449 §4.3 points 4 to 6) and parses its key.
pub(crate) fn parse(encoded: &str, allowed: &[Algorithm]) -> Result<ProofKey, ProofError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| ProofError::Malformed)?;
    let header: Header = serde_json::from_slice(&bytes).map_err(|_| ProofError::Malformed)?;
    if !header.typ.as_deref().is_some_and(is_dpop_type) {
        return Err(ProofError::Type);
    }
    // No extension this guard understands, so none it may be asked to (RFC 7515 §4.1.11).
    if header.crit.is_some() {
        return Err(ProofError::Malformed);
    }
    let algorithm = allowed
        .iter()
        .copied()
        .find(|a| a.name() == header.alg)
        .ok_or(ProofError::Algorithm)?;
    let members = header.jwk.ok_or(ProofError::Key)?;
    if PRIVATE_MEMBERS.iter().any(|m| members.contains_key(*m)) {
        return Err(ProofError::PrivateKey);
    }
    let jwk: Jwk = serde_json::from_value(Value::Object(members)).map_err(|_| ProofError::Key)?;
    if !fits(&jwk, algorithm) {
        return Err(ProofError::Key);
    }
    let jkt = jwk
        .thumbprint(ThumbprintHash::SHA256)
        .map_err(|_| ProofError::Key)?;
    let key = PublicKey::from_jwk(&jwk, algorithm).ok_or(ProofError::Key)?;
    Ok(ProofKey {
        jkt: jkt.into(),
        key,
    })
}

/// `dpop+jwt`, or its full media type, in any case (RFC 7515 §4.1.9).
fn is_dpop_type(typ: &str) -> bool {
    let typ = match typ.get(..12) {
        Some(prefix) if prefix.eq_ignore_ascii_case("application/") => &typ[12..],
        _ => typ,
    };
    typ.eq_ignore_ascii_case("dpop+jwt")
}

/// Whether `jwk` is a key of the type and size `algorithm` signs with.
fn fits(jwk: &Jwk, algorithm: Algorithm) -> bool {
    match (&jwk.algorithm, algorithm) {
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES384) => {
            ec.curve == EllipticCurve::P384
        }
        (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => {
            okp.curve == EllipticCurve::Ed25519
        }
        (AlgorithmParameters::RSA(rsa), Algorithm::RS256 | Algorithm::PS256) => URL_SAFE_NO_PAD
            .decode(&rsa.n)
            .is_ok_and(|n| n.iter().skip_while(|b| **b == 0).count() >= MIN_RSA_MODULUS_BYTES),
        _ => false,
    }
}

/// Parsed proof keys by encoded header, bounded; when full, one goes to make room.
pub(crate) struct KeyCache {
    entries: Mutex<HashMap<Box<str>, Arc<ProofKey>>>,
    max: usize,
}

impl KeyCache {
    pub(crate) fn new(max: usize) -> KeyCache {
        KeyCache {
            entries: Mutex::new(HashMap::new()),
            max,
        }
    }

    /// The key of `encoded`, parsed now or earlier. Headers that fail are not kept.
    pub(crate) fn get(
        &self,
        encoded: &str,
        allowed: &[Algorithm],
    ) -> Result<Arc<ProofKey>, ProofError> {
        if let Some(key) = self.lock().get(encoded) {
            return Ok(key.clone());
        }
        let key = Arc::new(parse(encoded, allowed)?);
        if self.max > 0 {
            let mut entries = self.lock();
            if entries.len() >= self.max
                && let Some(victim) = entries.keys().next().cloned()
            {
                entries.remove(&victim);
            }
            entries.insert(encoded.into(), key.clone());
        }
        Ok(key)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Box<str>, Arc<ProofKey>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Algorithm; 5] = Algorithm::ALL;

    fn header(value: Value) -> String {
        URL_SAFE_NO_PAD.encode(value.to_string())
    }

    fn ec() -> Value {
        serde_json::json!({
            "kty": "EC", "crv": "P-256",
            "x": "GOH5th3s96eQ8zXWmAjMSkM7l_BqwpvtZbOsXuPN4NA",
            "y": "hggr5CiPPl1ffnW3oilKjCAgb7KqxW-Fmu-x7hvXmNo",
        })
    }

    #[test]
    fn the_rfc_7638_thumbprint_of_the_key_is_kept() {
        // RFC 7638 §3.1's example key and thumbprint.
        let rsa = serde_json::json!({
            "kty": "RSA", "e": "AQAB", "alg": "RS256", "kid": "2011-04-29",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        });
        let encoded = header(serde_json::json!({"typ": "dpop+jwt", "alg": "RS256", "jwk": rsa}));
        let key = parse(&encoded, &ALL).ok().unwrap();
        assert_eq!(&*key.jkt, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
        assert!(matches!(key.key, PublicKey::Rsa(..)));
    }

    #[test]
    fn headers_row_by_row() {
        let rows = [
            (
                serde_json::json!({"typ": "JWT", "alg": "ES256", "jwk": ec()}),
                ProofError::Type,
            ),
            (
                serde_json::json!({"alg": "ES256", "jwk": ec()}),
                ProofError::Type,
            ),
            (
                serde_json::json!({"typ": "dpop+jwt", "alg": "none", "jwk": ec()}),
                ProofError::Algorithm,
            ),
            (
                serde_json::json!({"typ": "dpop+jwt", "alg": "HS256", "jwk": ec()}),
                ProofError::Algorithm,
            ),
            (
                serde_json::json!({"typ": "dpop+jwt", "alg": "ES256"}),
                ProofError::Key,
            ),
            (
                serde_json::json!({"typ": "dpop+jwt", "alg": "ES384", "jwk": ec()}),
                ProofError::Key,
            ),
            (
                serde_json::json!({"typ": "dpop+jwt", "alg": "RS256", "jwk": ec()}),
                ProofError::Key,
            ),
            (
                serde_json::json!({"typ": "dpop+jwt", "alg": "RS256", "jwk": {"kty": "RSA", "e": "AQAB", "n": "AQAB"}}),
                ProofError::Key,
            ),
            (
                serde_json::json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": {"kty": "oct", "k": "c2VjcmV0"}}),
                ProofError::PrivateKey,
            ),
            (
                serde_json::json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": ec(), "crit": ["exp"]}),
                ProofError::Malformed,
            ),
        ];
        for (value, expected) in rows {
            let result = parse(&header(value.clone()), &ALL);
            assert_eq!(result.err(), Some(expected), "{value}");
        }
        assert_eq!(parse("%%%", &ALL).err(), Some(ProofError::Malformed));
        assert_eq!(
            parse(&URL_SAFE_NO_PAD.encode("[]"), &ALL).err(),
            Some(ProofError::Malformed)
        );
        let only_rsa = parse(
            &header(serde_json::json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": ec()})),
            &[Algorithm::RS256],
        );
        assert_eq!(only_rsa.err(), Some(ProofError::Algorithm));
        let typ = serde_json::json!({"typ": "application/DPoP+JWT", "alg": "ES256", "jwk": ec()});
        assert!(parse(&header(typ), &ALL).is_ok());
    }

    #[test]
    fn the_cache_keeps_good_headers_within_its_bound() {
        let cache = KeyCache::new(1);
        let good = header(serde_json::json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": ec()}));
        let other = header(serde_json::json!({"alg": "ES256", "typ": "dpop+jwt", "jwk": ec()}));
        let bad = header(serde_json::json!({"typ": "dpop+jwt", "alg": "none", "jwk": ec()}));
        let first = cache.get(&good, &ALL).ok().unwrap();
        let again = cache.get(&good, &ALL).ok().unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert!(cache.get(&bad, &ALL).is_err());
        assert_eq!(cache.len(), 1);
        // Another header for the same key: same thumbprint, and the bound holds.
        assert_eq!(cache.get(&other, &ALL).ok().unwrap().jkt, first.jkt);
        assert_eq!(cache.len(), 1);
        let off = KeyCache::new(0);
        assert!(off.get(&good, &ALL).is_ok());
        assert_eq!(off.len(), 0);
    }
}
