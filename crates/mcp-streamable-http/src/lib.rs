#![doc = include_str!("../README.md")]
#![deny(missing_docs, missing_debug_implementations)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use mcp_jsonrpc as jsonrpc;
pub use mcp_sse as sse;
pub use mcp_transport as transport;

/// The Streamable HTTP server (feature `server`), with `server::serve`, its accept loop with
/// production defaults (timeouts, a connection cap, graceful shutdown), and
/// `server::serve::shutdown_signal` for axum's graceful shutdown.
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use mcp_streamable_server as server;

/// The Streamable HTTP client (feature `client`).
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub use mcp_streamable_client as client;

/// Authorization for the server: the bearer-token guard, the protected resource metadata and,
/// with feature `jwt`, a JWT verifier (feature `auth`).
#[cfg(feature = "auth")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
pub use mcp_streamable_auth as auth;

/// OAuth 2.1 for the client: an [`AuthProvider`](mcp_streamable_client::AuthProvider) that
/// discovers the authorization server from a 401, registers the client, authorizes it (PKCE
/// through a loopback redirect, or client credentials), refreshes and steps up (feature
/// `oauth`).
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use mcp_streamable_oauth as oauth;

/// rmcp services and clients over these transports: `mcp-rmcp` (feature `rmcp`).
///
/// Named `rmcp_adapter`, not `rmcp`, so that importing it does not shadow the `rmcp` crate
/// itself, whose `ServerHandler` and macros an application uses beside it.
#[cfg(feature = "rmcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "rmcp")))]
pub use mcp_rmcp as rmcp_adapter;

/// Several nodes of one server sharing their sessions through Redis or a Redis Cluster: a
/// `RedisBackend` hands out the cluster of [`Config`](mcp_streamable_server::Config), with the
/// event store and session store it brings, so that nodes behind a load balancer without
/// session affinity serve one set of sessions (`mcp-streamable-redis`, feature `redis`).
///
/// Named `redis`, the name of the Redis client crate it is built on; that crate is not
/// re-exported.
///
/// ```no_run
/// use std::time::Duration;
/// use mcp_streamable_http::redis::{Options, RedisBackend};
/// use mcp_streamable_http::server::Config;
///
/// # async fn run() -> Result<(), mcp_streamable_http::redis::Error> {
/// // The idle timeout goes to both: the server's sessions and the lifetime of their keys.
/// let idle = Duration::from_secs(600);
/// let options = Options::default().session_expiry(idle);
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/", options).await?;
/// let config = Config::default().idle_timeout(idle).cluster(backend.cluster());
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use mcp_streamable_redis as redis;

/// The `http` crate the server and client speak (`Request`, `HeaderValue`, `StatusCode`), so
/// that its version always matches theirs (features `server`, `client`).
#[cfg(any(feature = "server", feature = "client"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "server", feature = "client"))))]
pub use http;
