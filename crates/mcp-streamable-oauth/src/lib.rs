//! OAuth 2.1 for MCP clients: an [`AuthProvider`](mcp_streamable_client::AuthProvider) for
//! `mcp-streamable-client` that does what the MCP authorization spec (2025-11-25) asks of a
//! client, so that connecting to a protected server is one builder.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_streamable_client::Client;
//! use mcp_streamable_oauth::{LoopbackRedirect, OAuth};
//!
//! let url = "https://mcp.example.com/mcp";
//! let browser = LoopbackRedirect::bind(|url| eprintln!("Open {url} to sign in")).await?;
//! let oauth = OAuth::builder(url).authorization_code(browser).build()?;
//! // Connect as usual (`Transport::connect`): the first 401 starts the authorization.
//! let client = Client::builder(url).auth(oauth).build()?;
//! # drop(client);
//! # Ok(()) }
//! ```
//!
//! # What it does
//!
//! - **Discovery**, from the server's 401: the protected resource metadata (RFC 9728) at the
//!   challenge's `resource_metadata`, else at the path-aware well-known URL, then the root one;
//!   then the authorization server's metadata at the RFC 8414 and OpenID Connect well-known
//!   URLs in the spec's order. A server without resource metadata is treated as a 2025-03-26
//!   one: its origin is the authorization server, with `/authorize`, `/token` and `/register`
//!   when it has no metadata either. The resource must cover the server's URL, and the
//!   metadata's `issuer` must be the one asked, compared as strings.
//! - **Client identity**, in the spec's order: [pre-registered](OAuthBuilder::preregistered)
//!   credentials, a [Client ID Metadata Document](OAuthBuilder::client_metadata_url) where the
//!   server takes one, else Dynamic Client Registration (RFC 7591), kept by issuer in the
//!   [`TokenStore`] and made again when the server answers `invalid_client`. A registration is
//!   never shown to another authorization server (SEP-2352).
//! - **The authorization-code grant** with PKCE S256, `state`, the `resource` parameter
//!   (RFC 8707: as the resource metadata publishes it) and RFC 9207's `iss` check, through an
//!   [`Interaction`]: [`LoopbackRedirect`] listens on a free port of 127.0.0.1.
//! - **Scopes**: the challenge's `scope`, else the resource's `scopes_supported`, else none;
//!   `offline_access` added where the authorization server lists it; on 403
//!   `insufficient_scope`, a new grant for the scopes held plus the ones asked, at most
//!   [`DEFAULT_MAX_STEP_UPS`] times in the provider's lifetime, and never for scopes the token
//!   already has.
//! - **Refresh** before expiry ([`DEFAULT_REFRESH_MARGIN`]) and after a 401.
//! - **The client-credentials grant** for machines, with `client_secret_basic`,
//!   `client_secret_post` or `private_key_jwt` ([`PrivateKeyJwt`], RFC 7523).
//! - **Workload identity federation** ([`OAuthBuilder::workload_identity`]): the JWT-bearer
//!   grant (RFC 7523) with the JWT a workload's platform issued it, asked of an [`Assertion`]
//!   for each grant; a refused grant is not tried again.
//! - **Enterprise-managed authorization** ([`OAuthBuilder::enterprise_managed`], SEP-990): the
//!   user's ID token exchanged at the enterprise's [`IdentityProvider`] (RFC 8693) for an
//!   ID-JAG naming the authorization server and the resource, then the JWT-bearer grant with
//!   it; no browser.
//! - **DPoP** ([`OAuthBuilder::dpop`], RFC 9449): tokens bound to a [`DpopKey`] (ES256). Every
//!   token request carries a proof (`htm`, `htu`, `iat`, `jti`), retried once with the
//!   authorization server's nonce after `use_dpop_nonce`; a `DPoP` token goes as
//!   `Authorization: DPoP` with a fresh proof per request, made by the transport's
//!   [`AuthProvider::proof`](mcp_streamable_client::AuthProvider::proof) call (`ath`, and the
//!   resource server's nonce: the transport keeps it and tries once more after its
//!   `use_dpop_nonce`). The key is kept with the tokens in the [`TokenStore`], so a stored
//!   token is used and refreshed with its own key; a server that answers with a bearer token
//!   gets it used as one.
//! - **Token endpoint authentication** as registered, else as the server advertises it.
//! - **Secrets** ([`Secret`]) show as `<redacted>` in `Debug` output and are never logged;
//!   `Authorization` header values are marked sensitive.
//!
//! # Why little of it comes from the `oauth2` crate
//!
//! `oauth2` models a client whose endpoints are known when it is built, with typed states per
//! endpoint. Here every endpoint is discovered at run time from a 401, the client identity is
//! chosen after discovery, and the spec needs what `oauth2` leaves out (RFC 9728 discovery,
//! RFC 9207 `iss`, Client ID Metadata Documents, step-up, the MCP scope rules); only the token
//! and registration requests would have been its, behind an adapter to our hyper client. So the
//! crate uses `url` for URLs and forms, `sha2` and `base64` for PKCE, `getrandom` for
//! verifiers and `state`, `jsonwebtoken` for client assertions and DPoP proofs, `p256` to make
//! DPoP keys, and writes the few form posts itself. Like `oauth2`, it takes its HTTP client
//! as a parameter ([`OAuthBuilder::http_client`], an `mcp_http_client::HttpClient`): by
//! default `mcp-http-client`'s, the stack the transport uses (no reqwest), each request bounded
//! by [`OAuthBuilder::http_timeout`] and 256 KiB.
//!
//! # How it is built
//!
//! The modules form layers, top to bottom; a module imports only from its own layer and the
//! ones below it:
//!
//! 1. `provider`: [`OAuth`], [`OAuthBuilder`], the state between requests.
//! 2. `grant`, `federation`: the authorization-code, client-credentials and refresh grants;
//!    the JWT-bearer ones (workload identity, enterprise-managed).
//! 3. `discovery`, `store`, `interaction`, `scope`: finding the authorization server, keeping
//!    tokens, the browser step, choosing scopes.
//! 4. `token`: the token endpoint, its client authentication and DPoP proof.
//! 5. `registration`: the client's identity.
//! 6. `challenge`, `metadata`, `pkce`, `http`, `dpop`: `WWW-Authenticate`, the metadata
//!    documents, PKCE, the requests through the HTTP client, DPoP keys and proofs.
//! 7. `secret`, `error`.
#![deny(missing_docs, missing_debug_implementations)]

mod challenge;
mod discovery;
mod dpop;
mod error;
mod federation;
mod grant;
mod http;
mod interaction;
mod metadata;
mod pkce;
mod provider;
mod registration;
mod scope;
mod secret;
mod store;
mod token;

pub use dpop::DpopKey;
pub use error::{BoxError, Error, ErrorKind};
pub use federation::{Assertion, AssertionFuture, IdentityProvider};
pub use interaction::{DEFAULT_REDIRECT_TIMEOUT, Interaction, InteractionFuture, LoopbackRedirect};
pub use metadata::{ResourceMetadata, ServerMetadata};
pub use provider::{
    DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_STEP_UPS, DEFAULT_REFRESH_MARGIN, OAuth, OAuthBuilder,
};
pub use registration::{PrivateKeyJwt, Registration};
pub use secret::Secret;
pub use store::{MemoryStore, StoreFuture, TokenStore};
pub use token::Tokens;
/// The URL type of [`Interaction`], from the `url` crate.
pub use url::Url;
