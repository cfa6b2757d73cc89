//! The servers this package builds for the suite to measure, beside the echo server example:
//! `mcp-ceiling` ([`ceiling`]), `mcp-flood` ([`flood`]), `rmcp-echo` ([`rmcp_echo`]), and the
//! proxy in front of several nodes, `mcp-proxy` ([`proxy`]). Each prints `listening on
//! http://ADDR/mcp` first, which the suite waits for, and serves until killed.

pub mod ceiling;
pub mod flood;
pub mod proxy;
pub mod rmcp_echo;

use std::error::Error as StdError;
use std::net::SocketAddr;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::TokioIo;

/// Where a server listens: the flag every server of the package takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Listen {
    /// Where to listen; port 0 picks a free one.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
}

/// How long to wait when accepting fails (out of file descriptors, most likely) before trying
/// again: long enough for a connection to end.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// Binds `listen`, prints `listening on http://ADDR/mcp`, and serves `service` over HTTP/1.1
/// with `TCP_NODELAY` on every accepted socket (without it, Nagle's algorithm holds small
/// writes back), one task per connection, on a runtime of as many threads as the cores it may
/// use (`taskset` pins it to one).
fn http1<S, B>(listen: &Listen, service: S) -> anyhow::Result<()>
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen.addr).await?;
        println!("listening on http://{}/mcp", listener.local_addr()?);
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            };
            tcp.set_nodelay(true)?;
            let service = service.clone();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    })
}
