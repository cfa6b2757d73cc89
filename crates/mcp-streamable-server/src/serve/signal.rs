//! Graceful shutdown for servers that run their own accept loop (axum's `serve`, say).

use std::future::Future;
use std::time::Duration;

use crate::http::service::StreamableHttpService;

/// A shutdown signal for another server's graceful shutdown: waits for `signal`, then shuts
/// `service` down ([`StreamableHttpService::shutdown`]: sessions end, standalone GET streams
/// close, requests in flight get `grace`), and only then completes.
///
/// A server's graceful shutdown waits for its open connections to finish, and an MCP
/// connection holding an SSE stream (the standalone GET stream above all) never finishes by
/// itself: axum's `with_graceful_shutdown(ctrl_c)` alone never returns while a client has one
/// open. With this as the signal, the streams end first, and the server's own drain finds
/// nothing left to wait for.
///
/// ```no_run
/// use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService};
/// use mcp_streamable_server::serve::shutdown_signal;
/// # async fn run() -> std::io::Result<()> {
/// # let service = StreamableHttpService::new(Config::default(), |_c: ServerConnection, _p| async {});
/// let app = axum::Router::new().route_service("/mcp", service.clone());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// axum::serve(listener, app)
///     .with_graceful_shutdown(shutdown_signal(
///         service,
///         std::time::Duration::from_secs(5),
///         tokio::signal::ctrl_c(),
///     ))
///     .await
/// # }
/// ```
pub async fn shutdown_signal<F>(service: StreamableHttpService, grace: Duration, signal: F)
where
    F: Future,
{
    let _ = signal.await;
    service.shutdown(grace).await;
}
