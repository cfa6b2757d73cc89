//! A proof key's signature check, with `ring`: its P-256, P-384, Ed25519 and RSA verification is
//! hand-tuned assembly, several times faster than the pure-Rust crates `jsonwebtoken` uses for
//! access tokens, and a DPoP proof is checked on every request (a JWS of ES256 or ES384 is the
//! fixed-width `r || s`, RFC 7518 §3.4).

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey, VerificationAlgorithm};

use super::config::Algorithm;

/// A proof's public key, ready to check signatures.
pub(crate) enum PublicKey {
    /// ECDSA or EdDSA: the algorithm, and the key (an uncompressed point, or Ed25519's `x`).
    Curve(&'static dyn VerificationAlgorithm, Vec<u8>),
    /// RSA: the padding and hash, the modulus and the exponent.
    Rsa(&'static signature::RsaParameters, Vec<u8>, Vec<u8>),
}

impl PublicKey {
    /// The key of `jwk` for `algorithm`; `None` if it is not one (its curve or size checked
    /// before, by the caller).
    pub(crate) fn from_jwk(jwk: &Jwk, algorithm: Algorithm) -> Option<PublicKey> {
        let decode = |text: &str| URL_SAFE_NO_PAD.decode(text).ok();
        match (&jwk.algorithm, algorithm) {
            (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256 | Algorithm::ES384) => {
                let (curve, width): (&'static dyn VerificationAlgorithm, usize) =
                    if algorithm == Algorithm::ES256 {
                        (&signature::ECDSA_P256_SHA256_FIXED, 32)
                    } else {
                        (&signature::ECDSA_P384_SHA384_FIXED, 48)
                    };
                let (x, y) = (decode(&ec.x)?, decode(&ec.y)?);
                if x.len() != width || y.len() != width {
                    return None;
                }
                let mut point = Vec::with_capacity(1 + 2 * width);
                point.push(0x04);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                Some(PublicKey::Curve(curve, point))
            }
            (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => {
                let x = decode(&okp.x)?;
                (x.len() == 32).then_some(PublicKey::Curve(&signature::ED25519, x))
            }
            (AlgorithmParameters::RSA(rsa), Algorithm::RS256 | Algorithm::PS256) => {
                let padding = if algorithm == Algorithm::RS256 {
                    &signature::RSA_PKCS1_2048_8192_SHA256
                } else {
                    &signature::RSA_PSS_2048_8192_SHA256
                };
                Some(PublicKey::Rsa(padding, decode(&rsa.n)?, decode(&rsa.e)?))
            }
            _ => None,
        }
    }

    /// Whether `signature` (base64url) is this key's over `message`.
    pub(crate) fn verifies(&self, message: &[u8], signature: &str) -> bool {
        let Ok(signature) = URL_SAFE_NO_PAD.decode(signature) else {
            return false;
        };
        match self {
            PublicKey::Curve(algorithm, key) => UnparsedPublicKey::new(*algorithm, key)
                .verify(message, &signature)
                .is_ok(),
            PublicKey::Rsa(padding, n, e) => RsaPublicKeyComponents { n, e }
                .verify(padding, message, &signature)
                .is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ec(x: &[u8], y: &[u8]) -> Jwk {
        serde_json::from_value(serde_json::json!({
            "kty": "EC", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
        }))
        .unwrap()
    }

    #[test]
    fn coordinates_of_the_wrong_width_make_no_key_and_bad_signatures_fail() {
        assert!(PublicKey::from_jwk(&ec(&[1; 31], &[1; 32]), Algorithm::ES256).is_none());
        assert!(PublicKey::from_jwk(&ec(&[1; 32], &[1; 32]), Algorithm::ES384).is_none());
        // The right width, not a point of the curve: every signature fails.
        let key = PublicKey::from_jwk(&ec(&[1; 32], &[1; 32]), Algorithm::ES256).unwrap();
        assert!(!key.verifies(b"message", &URL_SAFE_NO_PAD.encode([0u8; 64])));
        assert!(!key.verifies(b"message", "not base64!"));
    }
}
