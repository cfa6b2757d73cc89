//! Serving a `StreamableHttpService` at `/mcp` over TCP, as the example servers do.
//!
//! A thin wrapper over the server crate's `serve`, which does the work with production
//! defaults: header, body and idle timeouts, a connection cap, HTTP/1.1 and HTTP/2 with a
//! per-connection reset budget, `TCP_NODELAY`, and a graceful shutdown that ends sessions
//! and streams. MCP is served at `/mcp` (and, when the service is protected, its metadata at
//! the guard's paths), the liveness probe at `/livez` and the readiness probe at `/readyz`
//! (503 once shutdown begins, or while a node of several does not hold its lease); other paths
//! get 404. SIGTERM (what systemd, docker and Kubernetes send) stops it as Ctrl-C does.

use std::net::SocketAddr;

use mcp_streamable_http::server::StreamableHttpService;
use mcp_streamable_http::server::serve::{self, Options};

/// Binds `addr`, prints `listening on http://ADDR/mcp` (the first line, which scripts wait
/// for), and serves `service` until SIGINT (Ctrl-C) or SIGTERM.
pub async fn serve(addr: SocketAddr, service: StreamableHttpService) -> anyhow::Result<()> {
    let listener = listen(addr).await?;
    until_terminated(listener, service).await
}

/// Binds `addr` and prints `listening on http://ADDR/mcp`, the first line, which scripts wait
/// for.
pub async fn listen(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    Ok(listener)
}

/// Serves `service` on `listener` until SIGINT (Ctrl-C) or SIGTERM (which `serve` logs).
pub async fn until_terminated(
    listener: tokio::net::TcpListener,
    service: StreamableHttpService,
) -> anyhow::Result<()> {
    run(listener, service, serve::terminated()).await
}

/// Serves `service` at `/mcp` on `listener` until `shutdown` completes, then shuts it down
/// gracefully; returns once everything is closed.
pub async fn run(
    listener: tokio::net::TcpListener,
    service: StreamableHttpService,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    Options::default()
        .path("/mcp")
        .health_paths("/livez", "/readyz")
        .serve(listener, service, shutdown)
        .await;
    Ok(())
}
