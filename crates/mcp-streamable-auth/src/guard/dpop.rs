//! The guard's DPoP steps: the proof before the token is verified, the binding and the replay
//! cache after.

use std::time::SystemTime;

use http::{HeaderMap, Method, Uri};

use super::Guard;
use crate::{
    challenge::Scheme,
    dpop::{Verified, error::ProofError},
    error::Refusal,
    error::RefusalKind,
    principal::Principal,
};

impl Guard {
    /// Checks the proof of a DPoP request for `token`. Done before the token is verified: a
    /// request without a good proof costs no verifier call.
    pub(super) fn proof(
        &self,
        target: Option<(&Method, &Uri)>,
        headers: &HeaderMap,
        token: &str,
    ) -> Result<Verified, Refusal> {
        let Some(dpop) = &self.inner.dpop else {
            // `credentials` takes the DPoP scheme only when DPoP is configured.
            return Err(self.refusal(RefusalKind::MissingToken, Scheme::Dpop));
        };
        let verified = match target {
            Some((method, uri)) => dpop.verify(method, uri, headers, token, SystemTime::now()),
            None => Err(ProofError::NoRequest),
        };
        verified.map_err(|error| {
            tracing::debug!(reason = %error, "dpop proof refused");
            if error.wants_nonce() {
                self.refusal(RefusalKind::UseDpopNonce, Scheme::Dpop)
                    .with_nonce(dpop.fresh_nonce())
                    .with_source(error)
            } else {
                self.refusal(RefusalKind::InvalidDpopProof, Scheme::Dpop)
                    .with_source(error)
            }
        })
    }

    /// Checks that `principal`'s token is bound to the key of `proof`, then that the proof is
    /// used for the first time. Last of the checks, so that only a proof good in every other way
    /// takes a place in the replay cache.
    pub(super) async fn bind(&self, principal: &Principal, proof: Verified) -> Result<(), Refusal> {
        if principal.jkt.as_deref() != Some(&*proof.jkt) {
            let bound = principal.jkt.is_some();
            tracing::debug!(subject = %principal.subject, bound, "token not bound to the proof's key");
            return Err(self.refusal(RefusalKind::TokenBinding, Scheme::Dpop));
        }
        let Some(dpop) = &self.inner.dpop else {
            return Err(self.refusal(RefusalKind::MissingToken, Scheme::Dpop));
        };
        match dpop.first_use(&proof.id).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                tracing::debug!(reason = %ProofError::Replayed, "dpop proof refused");
                Err(self
                    .refusal(RefusalKind::InvalidDpopProof, Scheme::Dpop)
                    .with_source(ProofError::Replayed))
            }
            Err(error) => {
                tracing::warn!(error = %error, source = ?std::error::Error::source(&error), "dpop replay cache unavailable");
                Err(self
                    .refusal(RefusalKind::Unavailable, Scheme::Dpop)
                    .with_source(error))
            }
        }
    }
}
