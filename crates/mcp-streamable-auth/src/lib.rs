//! Authorization for MCP servers over HTTP: the server as an OAuth 2.1 resource server, as the
//! MCP specification (2025-11-25, "Authorization") asks.
//!
//! - A [`Guard`] checks a request's `Authorization: Bearer` token (RFC 6750) through a
//!   [`TokenVerifier`] and the required scopes, and returns the [`Principal`] it stands for or a
//!   [`Refusal`] that knows its answer: a 401 whose `WWW-Authenticate` challenge points at the
//!   protected resource metadata, or a 403 with `error="insufficient_scope"`.
//! - The guard publishes the Protected Resource Metadata document (RFC 9728,
//!   [`ResourceMetadata`]) at its well-known paths, with the resource URL exactly as configured
//!   (RFC 8707 resource indicators are compared as strings, so a trailing slash matters).
//! - [`RequireBearer`] is the tower middleware that does both in front of any
//!   `Service<http::Request<B>>`: an MCP server, an axum router. A handler finds the
//!   [`Principal`] in the request's extensions.
//! - With the `jwt` feature, [`jwt::JwtVerifier`] verifies JWT access tokens against the
//!   authorization server's key set (JWKS): issuer, audience, expiry, signature.
//! - With the `dpop` feature, the guard takes DPoP-bound tokens (RFC 9449) and their proofs
//!   ([`GuardBuilder::dpop`], the [`dpop`] module): a stolen token is useless without the
//!   client's key. A token bound to a key is never taken as `Bearer`, with DPoP configured or not.
//!
//! A server binds each session to [`Principal::key`] (which includes a DPoP key's thumbprint)
//! and treats a session used with another principal's token as unknown.
//!
//! # Around any service
//!
//! ```
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use std::convert::Infallible;
//! use bytes::Bytes;
//! use http::{Request, Response};
//! use http_body_util::{BodyExt, Full};
//! use mcp_streamable_auth::{Guard, Principal, TokenError, TokenErrorKind, TokenVerifier, VerifyFuture};
//! use tower::{Layer, ServiceExt, service_fn};
//!
//! struct Fixed;
//! impl TokenVerifier for Fixed {
//!     fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
//!         Box::pin(async move {
//!             match token {
//!                 "secret" => Ok(Principal::new("alice").with_scopes(["mcp"])),
//!                 _ => Err(TokenError::new(TokenErrorKind::Invalid)),
//!             }
//!         })
//!     }
//! }
//!
//! let guard = Guard::builder("https://mcp.example.com/mcp")
//!     .authorization_server("https://auth.example.com")
//!     .required_scopes(["mcp"])
//!     .build(Fixed)?;
//! let server = service_fn(|request: Request<Full<Bytes>>| async move {
//!     let principal = request.extensions().get::<Principal>().expect("set by the layer");
//!     Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(principal.subject.clone()))))
//! });
//! let service = guard.layer().layer(server);
//!
//! // Unauthenticated: a 401 pointing at the metadata.
//! let response = service.clone().oneshot(Request::post("/mcp").body(Full::default())?).await?;
//! assert_eq!(response.status(), 401);
//! assert_eq!(
//!     response.headers()["www-authenticate"],
//!     r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp""#
//! );
//!
//! // The metadata, served by the layer itself.
//! let request = Request::get("/.well-known/oauth-protected-resource/mcp").body(Full::default())?;
//! let body = service.clone().oneshot(request).await?.into_body().collect().await?.to_bytes();
//! assert_eq!(
//!     body,
//!     r#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["mcp"],"bearer_methods_supported":["header"]}"#
//! );
//!
//! // Authenticated: the inner service runs and sees the principal.
//! let request = Request::post("/mcp").header("authorization", "Bearer secret").body(Full::default())?;
//! let body = service.oneshot(request).await?.into_body().collect().await?.to_bytes();
//! assert_eq!(body, "alice");
//! # Ok(())
//! # }
//! ```
//!
//! # In axum
//!
//! ```
//! use axum::{Extension, Router, routing::post};
//! use mcp_streamable_auth::{Guard, Principal};
//! # use mcp_streamable_auth::VerifyFuture;
//! # struct MyVerifier;
//! # impl mcp_streamable_auth::TokenVerifier for MyVerifier {
//! #     fn verify<'a>(&'a self, _: &'a str) -> VerifyFuture<'a> { Box::pin(async { Ok(Principal::new("a")) }) }
//! # }
//!
//! async fn mcp(Extension(principal): Extension<Principal>) -> String {
//!     format!("hello {}", principal.subject)
//! }
//!
//! let guard = Guard::builder("https://mcp.example.com/mcp")
//!     .authorization_server("https://auth.example.com")
//!     .build(MyVerifier)?;
//! // `layer` covers the routes and the fallback, so the layer answers the well-known paths.
//! let app: Router = Router::new().route("/mcp", post(mcp)).layer(guard.layer());
//! # Ok::<(), mcp_streamable_auth::ConfigError>(())
//! ```
//!
//! # Features
//!
//! - `jwt` (off by default): [`jwt::JwtVerifier`], with `jsonwebtoken` (pure-Rust crypto) and,
//!   for the key set, `mcp-http-client`'s client (https through rustls, the stack the
//!   workspace's clients share) or the application's own
//!   ([`JwtVerifierBuilder::http_client`](jwt::JwtVerifierBuilder::http_client)).
//! - `dpop` (off by default): [`dpop`], with `jsonwebtoken` (the proofs' keys), `ring` (their
//!   signatures, checked on every request), `sha2`, `hmac` and `getrandom`; no HTTP client.
//!
//! # What is left to the server
//!
//! CORS for the MCP endpoint itself (a browser client needs `Access-Control-Expose-Headers:
//! WWW-Authenticate` to read a challenge), session binding with [`Principal::key`], and the
//! authorization server: this crate never issues tokens.
//!
//! # How it is built
//!
//! The modules form layers, top to bottom. A module imports from its own layer and the ones
//! below it, never from one above (a tidy test, `cargo test -p xtask`, holds the code to this
//! list):
//!
//! 1. `guard`, `layer`: the guard, which reads a request's credentials and asks the verifier,
//!    the cache and, for a DPoP-bound token, the proof's checks; and its tower layer,
//!    `RequireBearer` (which the guard hands out, and which asks the guard).
//! 2. `jwt`, `dpop`: the JWT verifier with its key set, and DPoP's proofs, nonces and replay
//!    cache.
//! 3. `metadata`, `cache`, `challenge`, `verifier`: the protected resource metadata, the cache
//!    of verified tokens, the `WWW-Authenticate` challenges, and the verifier's trait.
//! 4. `principal`, `error`: who a token names, and the errors and refusals.

#![deny(missing_docs, missing_debug_implementations)]
// The docs link items behind features; they resolve where the docs are built with every
// feature (docs.rs, `cargo xtask ci`), and only there are all of those items documented.
#![cfg_attr(
    not(all(feature = "jwt", feature = "dpop")),
    allow(rustdoc::broken_intra_doc_links)
)]
#![forbid(unsafe_code)]

mod cache;
mod challenge;
#[cfg(feature = "dpop")]
#[cfg_attr(docsrs, doc(cfg(feature = "dpop")))]
pub mod dpop;
mod error;
mod guard;
#[cfg(feature = "jwt")]
pub mod jwt;
mod layer;
mod metadata;
mod principal;
mod verifier;

pub use cache::{DEFAULT_CACHE_TTL, DEFAULT_CACHED_TOKENS};
#[cfg(feature = "dpop")]
pub use error::ReplayError;
pub use error::{ConfigError, Refusal, RefusalKind, TokenError, TokenErrorKind};
#[cfg(feature = "jwt")]
pub use error::{JwksError, JwksErrorKind};
pub use guard::{Guard, GuardBuilder, MAX_TOKEN_BYTES};
pub use layer::{RequireBearer, RequireBearerLayer, ResponseBody, ResponseFuture};
pub use metadata::{MetadataService, ResourceMetadata, WELL_KNOWN_PREFIX};
pub use principal::{Principal, PrincipalKey};
pub use verifier::{TokenVerifier, VerifyFuture};
