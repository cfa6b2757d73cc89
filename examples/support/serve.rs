//! Serving a `StreamableHttpService` at `/mcp` over TCP, as the example servers do: included by
//! each of them with `#[path]`.
//!
//! Every accepted connection gets `TCP_NODELAY` (without it, Nagle's algorithm and delayed ACKs
//! stall each reply by tens of milliseconds) and is served with HTTP/1.1 or HTTP/2, whichever
//! the client speaks. Ctrl-C shuts down gracefully: sessions end, streams close, requests in
//! flight get `SHUTDOWN_GRACE`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use mcp_streamable_http::http::{Request, Response, StatusCode};
use mcp_streamable_http::server::StreamableHttpService;

/// How long requests in flight get to finish once Ctrl-C is pressed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Binds `addr`, prints `listening on http://ADDR/mcp` (the first line, which scripts wait
/// for), and serves `service` until Ctrl-C.
pub(crate) async fn serve(addr: SocketAddr, service: StreamableHttpService) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("shutting down");
    };
    run(listener, service, ctrl_c).await
}

/// Serves `service` on `listener` until `shutdown` completes, then shuts it down gracefully.
pub(crate) async fn run(
    listener: tokio::net::TcpListener,
    service: StreamableHttpService,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (tcp, _) = match accepted {
                    Ok(conn) => conn,
                    Err(err) => {
                        tracing::warn!(error = %err, "accept failed");
                        continue;
                    }
                };
                tcp.set_nodelay(true)?;
                let service = service.clone();
                tokio::spawn(async move {
                    let router = hyper::service::service_fn(move |req| route(service.clone(), req));
                    if let Err(err) = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tcp), router)
                        .await
                    {
                        tracing::debug!(error = %err, "connection ended");
                    }
                });
            }
            () = &mut shutdown => {
                service.shutdown(SHUTDOWN_GRACE).await;
                return Ok(());
            }
        }
    }
}

type Body = Either<mcp_streamable_http::server::ResponseBody, Full<Bytes>>;

/// MCP at `/mcp`, the protected resource metadata at its paths when the service is protected
/// (the service answers them itself), 404 elsewhere.
async fn route(
    service: StreamableHttpService,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path();
    let metadata = service
        .config()
        .guard()
        .is_some_and(|guard| guard.metadata_paths().iter().any(|served| served == path));
    if path == "/mcp" || metadata {
        return Ok(service.handle(req).await.map(Either::Left));
    }
    let mut response = Response::new(Either::Right(Full::new(Bytes::from_static(
        b"not found: MCP is served at /mcp\n",
    ))));
    *response.status_mut() = StatusCode::NOT_FOUND;
    Ok(response)
}
