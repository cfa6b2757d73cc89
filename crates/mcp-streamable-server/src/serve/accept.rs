//! The accept loop: a cap on connections, a task per connection, and the graceful shutdown
//! that ends the service's sessions and then the connections.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::core::owner::PeerAddr;
use crate::http::peer::ACCEPT_BACKOFF;
use crate::http::service::StreamableHttpService;
use crate::serve::connection::serve_connection;
use crate::serve::options::Options;

/// Serves `service` on `listener` with `options` until `shutdown` completes, then shuts down
/// gracefully (see [`Options::serve`]).
pub(crate) async fn run<F>(
    listener: TcpListener,
    service: StreamableHttpService,
    options: Options,
    shutdown: F,
) where
    F: Future,
{
    let options = Arc::new(options);
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let (stop, stopped) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    // Bounded by `shutdown`: each turn accepts one connection or waits for a slot or a
    // backoff, and every wait also ends when `shutdown` does.
    loop {
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            _ = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                tracing::warn!(error = %err, "accept failed");
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    _ = &mut shutdown => break,
                }
            }
        };
        let (service, options, stopped) = (service.clone(), Arc::clone(&options), stopped.clone());
        connections.spawn(async move {
            // Counted until the task ends, or is dropped past the shutdown grace.
            #[cfg(feature = "otel")]
            let _open = crate::core::telemetry::OpenConnection::new(service.telemetry());
            serve_connection(tcp, PeerAddr(peer), service, options, stopped).await;
            drop(slot);
        });
    }
    // H2: unready before anything closes, for probes on connections still open.
    service.begin_shutdown();
    drop(listener);
    finish(service, &options, stop, connections).await;
}

/// Shuts down: connections are asked to close once what they carry is over (HTTP/2:
/// `GOAWAY`), the service ends its sessions and streams and gives requests in flight the
/// grace; then connections get the grace again to close before they are dropped.
async fn finish(
    service: StreamableHttpService,
    options: &Options,
    stop: watch::Sender<bool>,
    mut connections: JoinSet<()>,
) {
    let _ = stop.send(true);
    service.shutdown(options.shutdown_grace).await;
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(options.shutdown_grace, drained)
        .await
        .is_err()
    {
        tracing::debug!(
            left = connections.len(),
            "connections still open after the grace; dropped"
        );
    }
    connections.shutdown().await;
}
