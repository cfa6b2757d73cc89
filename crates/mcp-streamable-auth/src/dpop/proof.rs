//! One proof JWT: its three parts, its signature by the key of its header, its claims.

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::Deserialize;

use super::config::{Algorithm, MAX_PROOF_BYTES};
use super::error::ProofError;
use super::key::{KeyCache, ProofKey};

/// The claims of a proof (RFC 9449 §4.2); the guard checks each.
#[derive(Debug, Deserialize)]
pub(crate) struct Claims {
    pub(crate) jti: String,
    pub(crate) htm: String,
    pub(crate) htu: String,
    pub(crate) iat: i64,
    pub(crate) ath: Option<String>,
    pub(crate) nonce: Option<String>,
}

/// A proof whose signature is good, with its key and its claims.
pub(crate) struct Signed {
    pub(crate) key: Arc<ProofKey>,
    pub(crate) claims: Claims,
}

/// The most bytes of a `jti`: RFC 9449 asks for 96 bits of randomness, a few dozen characters;
/// more would only grow what the replay cache hashes.
const MAX_JTI_BYTES: usize = 256;

/// Splits `proof` (RFC 9449 §4.3 points 2 and 3), finds the key of its header and verifies its
/// signature (points 4 to 7), then reads its claims.
pub(crate) fn verify(
    proof: &str,
    keys: &KeyCache,
    allowed: &[Algorithm],
) -> Result<Signed, ProofError> {
    if proof.len() > MAX_PROOF_BYTES {
        return Err(ProofError::Malformed);
    }
    let mut parts = proof.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ProofError::Malformed);
    };
    let key = keys.get(header, allowed)?;
    let message = &proof[..header.len() + 1 + payload.len()];
    if !key.key.verifies(message.as_bytes(), signature) {
        return Err(ProofError::Signature);
    }
    let payload = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| ProofError::Malformed)?;
    let claims: Claims = serde_json::from_slice(&payload).map_err(|_| ProofError::Claims)?;
    if claims.jti.is_empty() || claims.jti.len() > MAX_JTI_BYTES {
        return Err(ProofError::Claims);
    }
    Ok(Signed { key, claims })
}
