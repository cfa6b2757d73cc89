//! Integration tests: the JWT verifier against a JWKS served on the loopback, and DPoP against
//! the guard.

#[cfg(feature = "dpop")]
mod dpop;
#[cfg(feature = "jwt")]
mod jwt;
