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
///         mcp_streamable_server::serve::terminated(),
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

/// Completes when the process is asked to stop: on SIGINT (Ctrl-C) or SIGTERM on unix, on
/// Ctrl-C elsewhere. SIGTERM is what `systemctl stop`, `docker stop` and Kubernetes send
/// before they kill a process: without a handler for it, it ends the process at once, as
/// `kill -9` would, with no session handed over and no stream ended cleanly.
///
/// Give it to [`serve`](super::serve()) (or [`Options::serve`](super::Options::serve)) as its
/// shutdown, or to [`shutdown_signal`] as its signal. Call it within a tokio runtime: it
/// installs its handlers when called, not when first polled, so a signal that arrives in
/// between is not lost (and no longer ends the process: once tokio handles a signal, it does
/// so for the rest of the process's life). Should a handler fail to install, it logs why and
/// waits on the others.
///
/// ```no_run
/// use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService, serve};
///
/// # async fn run() -> std::io::Result<()> {
/// # let session = |_conn: ServerConnection, _parts: http::request::Parts| async {};
/// let service = StreamableHttpService::new(Config::default(), session);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// serve::serve(listener, service, serve::terminated()).await;
/// # Ok(())
/// # }
/// ```
pub fn terminated() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let install = |kind: SignalKind, name: &'static str| {
            signal(kind)
                .inspect_err(|err| tracing::warn!(error = %err, "cannot handle {name}"))
                .ok()
        };
        let interrupt = install(SignalKind::interrupt(), "SIGINT");
        let terminate = install(SignalKind::terminate(), "SIGTERM");
        async move {
            let received = |signal: Option<tokio::signal::unix::Signal>| async move {
                match signal {
                    Some(mut signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = received(interrupt) => tracing::info!("SIGINT received; shutting down"),
                _ = received(terminate) => tracing::info!("SIGTERM received; shutting down"),
            }
        }
    }
    #[cfg(not(unix))]
    async {
        match tokio::signal::ctrl_c().await {
            Ok(()) => tracing::info!("Ctrl-C received; shutting down"),
            Err(err) => {
                tracing::warn!(error = %err, "cannot handle Ctrl-C");
                std::future::pending::<()>().await;
            }
        }
    }
}
