//! The seam between the guard and whatever knows how to check a token.

use std::{future::Future, pin::Pin, sync::Arc};

use crate::{error::TokenError, principal::Principal};

/// The future a [`TokenVerifier`] returns: boxed, so that the trait stays object-safe and usable
/// as `Arc<dyn TokenVerifier>` without a macro crate.
pub type VerifyFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Principal, TokenError>> + Send + 'a>>;

/// Turns a bearer token into the [`Principal`] it stands for, or says why it cannot.
///
/// An implementation checks everything that makes the token good for this server: signature or
/// introspection, expiry, issuer and, under RFC 8707, that its audience includes this server's
/// resource URL ([`TokenErrorKind::WrongAudience`](crate::TokenErrorKind::WrongAudience)
/// otherwise). Scopes are the guard's business: report them in [`Principal::scopes`].
///
/// The `jwt` feature brings [`JwtVerifier`](crate::jwt::JwtVerifier); anything else (token
/// introspection, a database of API keys) fits here:
///
/// ```
/// use mcp_streamable_auth::{Principal, TokenError, TokenErrorKind, TokenVerifier, VerifyFuture};
///
/// /// Accepts one fixed token, for a development setup.
/// struct Fixed;
///
/// impl TokenVerifier for Fixed {
///     fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
///         Box::pin(async move {
///             if token == "let-me-in" {
///                 Ok(Principal::new("developer").with_scopes(["mcp"]))
///             } else {
///                 Err(TokenError::new(TokenErrorKind::Invalid))
///             }
///         })
///     }
/// }
/// ```
pub trait TokenVerifier: Send + Sync {
    /// Verifies `token`, the credentials of an `Authorization: Bearer` header (already checked to
    /// be a non-empty RFC 6750 `b64token`).
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a>;
}

impl<V: TokenVerifier + ?Sized> TokenVerifier for Arc<V> {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        (**self).verify(token)
    }
}

impl<V: TokenVerifier + ?Sized> TokenVerifier for Box<V> {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        (**self).verify(token)
    }
}
