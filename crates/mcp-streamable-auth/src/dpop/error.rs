//! What was wrong with a proof.

use std::{error::Error, fmt};

use super::nonce::Stale;

/// What was wrong with a proof, for the logs: the client only learns `invalid_dpop_proof` (or
/// `use_dpop_nonce`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProofError {
    Missing,
    Repeated,
    Malformed,
    Type,
    Algorithm,
    Key,
    PrivateKey,
    Signature,
    Claims,
    Method,
    Url,
    TooOld,
    Future,
    AccessTokenHash,
    Nonce(Stale),
    Replayed,
    NoRequest,
}

impl ProofError {
    /// Whether a new nonce, not a new proof alone, is what the client needs.
    pub(crate) fn wants_nonce(self) -> bool {
        matches!(self, ProofError::Nonce(_))
    }
}

impl fmt::Display for ProofError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProofError::Missing => "no dpop header",
            ProofError::Repeated => "more than one dpop header",
            ProofError::Malformed => "proof is not a well-formed jwt",
            ProofError::Type => "proof typ is not dpop+jwt",
            ProofError::Algorithm => "proof alg not allowed",
            ProofError::Key => "proof jwk missing, unusable or not fit for its alg",
            ProofError::PrivateKey => "proof jwk holds private key members",
            ProofError::Signature => "proof signature does not verify",
            ProofError::Claims => "proof claims missing or malformed",
            ProofError::Method => "proof htm is not the request's method",
            ProofError::Url => "proof htu is not the request's url",
            ProofError::TooOld => "proof iat too old",
            ProofError::Future => "proof iat in the future",
            ProofError::AccessTokenHash => "proof ath missing or not the access token's hash",
            ProofError::Nonce(Stale::Missing) => "proof nonce missing",
            ProofError::Nonce(Stale::Invalid) => "proof nonce not one this server gave",
            ProofError::Nonce(Stale::Expired) => "proof nonce expired",
            ProofError::Replayed => "proof jti already used",
            ProofError::NoRequest => "proof cannot be checked without the request's method and url",
        })
    }
}

impl Error for ProofError {}
