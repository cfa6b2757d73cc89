//! The node's HTTP/2 connections to its peers: one per peer address, opened when first needed
//! and again when it closes, every forwarded request a stream of it (N9).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::uri::{Authority, Scheme, Uri};
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

/// How long connecting to a peer may take: on one network, a peer that does not accept in this
/// long is down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How often an idle connection to a peer is pinged, and how long the pong may take: a peer
/// that stops answering (paused, cut off) is given up within their sum.
pub(crate) const PING_EVERY: Duration = Duration::from_secs(1);
pub(crate) const PING_TIMEOUT: Duration = Duration::from_secs(1);

/// HTTP/2 windows: one forwarded answer of a few MiB (a large tool result) flows without a
/// round trip per 64 KiB, the protocol's default.
pub(crate) const STREAM_WINDOW: u32 = 1 << 20;
pub(crate) const CONNECTION_WINDOW: u32 = 4 << 20;

/// Why a forward got no answer: whether or not the holder took it, the forward is asked again
/// under its id, which the holder's store begins once (N9).
#[derive(Debug)]
pub(crate) struct Failed(pub(crate) String);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Connection = Arc<tokio::sync::Mutex<Option<Open>>>;

/// An open connection to a peer, and the peer's address as a URI's authority, written once.
struct Open {
    sender: SendRequest<Full<Bytes>>,
    authority: Authority,
}

/// The connections to the peers, by address.
#[derive(Default)]
pub(crate) struct Peers {
    connections: Mutex<HashMap<SocketAddr, Connection>>,
}

impl Peers {
    /// Sends `request` to the peer at `address` and waits, at most `within`, for the head of
    /// its answer. The request's URI is its path: the peer's scheme and authority are set here.
    pub(crate) async fn send(
        &self,
        address: SocketAddr,
        mut request: Request<Full<Bytes>>,
        within: Duration,
    ) -> Result<Response<Incoming>, Failed> {
        let (mut sender, authority) = self.sender(address).await?;
        let mut uri = std::mem::take(request.uri_mut()).into_parts();
        uri.scheme = Some(Scheme::HTTP);
        uri.authority = Some(authority);
        *request.uri_mut() = Uri::from_parts(uri).map_err(|e| Failed(format!("not sent: {e}")))?;
        let sent = sender.try_send_request(request);
        match tokio::time::timeout(within, sent).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(mut err)) => {
                let sent = if err.take_message().is_some() {
                    "not sent"
                } else {
                    "no answer"
                };
                Err(Failed(format!("{sent}: {}", err.into_error())))
            }
            Err(_) => Err(Failed(format!(
                "no answer from {address} within {within:?}"
            ))),
        }
    }

    /// A sender on the connection to `address`, opened if there is none or it closed, and the
    /// address as an authority.
    async fn sender(
        &self,
        address: SocketAddr,
    ) -> Result<(SendRequest<Full<Bytes>>, Authority), Failed> {
        let connection = Arc::clone(
            self.connections
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(address)
                .or_default(),
        );
        let mut slot = connection.lock().await;
        if let Some(open) = slot.as_ref().filter(|o| !o.sender.is_closed()) {
            return Ok((open.sender.clone(), open.authority.clone()));
        }
        let sender = connect(address).await?;
        let authority = Authority::try_from(address.to_string())
            .map_err(|e| Failed(format!("not sent: {address}: {e}")))?;
        *slot = Some(Open {
            sender: sender.clone(),
            authority: authority.clone(),
        });
        Ok((sender, authority))
    }

    /// Forgets the connection to `address`: the next forward opens a new one.
    pub(crate) fn forget(&self, address: SocketAddr) {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&address);
    }
}

async fn connect(address: SocketAddr) -> Result<SendRequest<Full<Bytes>>, Failed> {
    let not_sent = |why: String| Failed(format!("not sent: connecting to {address}: {why}"));
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(address))
        .await
        .map_err(|_| not_sent(format!("no answer in {CONNECT_TIMEOUT:?}")))?
        .map_err(|e| not_sent(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) = http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .keep_alive_interval(PING_EVERY)
        .keep_alive_timeout(PING_TIMEOUT)
        .keep_alive_while_idle(true)
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| not_sent(e.to_string()))?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!(peer = %address, error = %err, "connection to a peer ended");
        }
    });
    Ok(sender)
}
