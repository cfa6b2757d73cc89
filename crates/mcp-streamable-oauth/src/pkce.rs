//! PKCE (RFC 7636) with S256, and the random `state` of an authorization request.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind};
use crate::secret::Secret;

/// Bytes of randomness in a verifier: 32 give 43 base64url characters, the least RFC 7636
/// allows, and 256 bits of entropy.
const VERIFIER_BYTES: usize = 32;

/// A PKCE pair: the verifier kept for the token request, its S256 challenge sent with the
/// authorization request.
#[derive(Debug)]
pub(crate) struct Pkce {
    pub(crate) verifier: Secret,
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh pair from the operating system's random source.
    pub(crate) fn new() -> Result<Pkce, Error> {
        Ok(Pkce::from_verifier(random_token()?))
    }

    fn from_verifier(verifier: String) -> Pkce {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Pkce {
            verifier: Secret::new(verifier),
            challenge,
        }
    }
}

/// 32 random bytes in base64url: a PKCE verifier, a `state`, a `jti`.
pub(crate) fn random_token() -> Result<String, Error> {
    let mut bytes = [0u8; VERIFIER_BYTES];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::new(ErrorKind::Config).with(e))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s_example() {
        // RFC 7636, appendix B.
        let pkce = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(
            pkce.challenge,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_long_unreserved_and_fresh() {
        let a = Pkce::new().unwrap();
        let b = Pkce::new().unwrap();
        let verifier = a.verifier.expose();
        assert_eq!(verifier.len(), 43);
        assert!(
            verifier
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_ne!(a.verifier, b.verifier);
        assert_ne!(random_token().unwrap(), random_token().unwrap());
    }
}
