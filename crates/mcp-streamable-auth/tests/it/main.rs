//! Integration tests: the JWT verifier against a JWKS served on the loopback.

#[cfg(feature = "jwt")]
mod jwt;
