//! The holder's side of the requests other nodes forward (N9): HTTP/2 on the listener the
//! cluster gives, each request's signature and deadline checked before anything else, then
//! served as if its client had sent it here, its answer streamed back. Only sessions held here,
//! under the fence the forward names, are served; anything else is refused as not here, and
//! the asking node looks again.

use std::sync::{Arc, Weak};
use std::time::Duration;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::cluster::peers;
use crate::cluster::sign::{Forward, MCP_FORWARD, MCP_FORWARD_AFTER, Refused};
use crate::core::owner::SessionOwner;
use crate::http::app::Server;
use crate::http::error::{Kind, Reject};
use crate::http::local::{After, held, refused};
use crate::http::read::read_body;
use crate::http::reply::ResponseBody;
use crate::http::{checks, delete, get, post};
use crate::protocol::EventId;
use crate::protocol::transport::TransportHeaders;

/// The streams one peer may have open on its connection: each is a request of a client of
/// that node, and a standalone stream stays open as long as its client reads it.
const MAX_STREAMS: u32 = 4096;

/// How long to wait after a failed `accept` (out of file descriptors, most often) before the
/// next, so that the loop does not spin while the condition lasts.
pub(crate) const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves the peers' requests on the cluster's listener, once per service, until the service
/// is gone.
pub(crate) fn listen(server: &Arc<Server>) {
    let Some(listener) = server.nodes.as_ref().and_then(|n| n.cluster.listener()) else {
        return;
    };
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
    {
        Ok(listener) => listener,
        Err(err) => {
            tracing::error!(error = %err, "the listener for the other nodes cannot be served: they cannot forward to this node");
            return;
        }
    };
    let server = Arc::downgrade(server);
    tokio::spawn(async move {
        loop {
            let accepted = listener.accept().await;
            if server.strong_count() == 0 {
                return;
            }
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a peer's connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(serve_peer(Weak::clone(&server), stream, peer));
        }
    });
}

async fn serve_peer(
    server: Weak<Server>,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
) {
    let service = hyper::service::service_fn(move |request| {
        let server = server.upgrade();
        async move {
            Ok::<_, std::convert::Infallible>(match server {
                Some(server) => handle(&server, request).await,
                None => refused("not-here"),
            })
        }
    });
    let served = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS)
        .initial_stream_window_size(peers::STREAM_WINDOW)
        .initial_connection_window_size(peers::CONNECTION_WINDOW)
        .keep_alive_interval(peers::PING_EVERY)
        .keep_alive_timeout(peers::PING_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(err) = served {
        tracing::debug!(%peer, error = %err, "a peer's connection ended");
    }
}

/// One forwarded request.
async fn handle(server: &Arc<Server>, request: Request<Incoming>) -> Response<ResponseBody> {
    let Some(nodes) = &server.nodes else {
        return refused("not-here");
    };
    let (mut parts, body) = request.into_parts();
    let bytes = match read_body(&parts.headers, body, server.shared.config.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(reject) => return reject.into_response("POST"),
    };
    let cluster = &nodes.cluster;
    let forward = match Forward::verify(cluster.secret(), &parts.method, &parts.headers, &bytes) {
        Ok(forward) => forward,
        Err(Refused::Expired) => return refused("expired"),
        Err(why) => {
            tracing::warn!(
                ?why,
                "a forwarded request was refused: its signature does not hold"
            );
            return Reject::new(Kind::Forbidden, "not a request of this server's nodes")
                .into_response("POST");
        }
    };
    if !nodes.is_this_node(&forward.node, forward.fence.incarnation) {
        return refused("not-here");
    }
    parts.headers.remove(MCP_FORWARD);
    if let Some(after) = parts.headers.remove(MCP_FORWARD_AFTER)
        && let Some(after) = after.to_str().ok().and_then(|a| a.parse::<EventId>().ok())
    {
        parts.extensions.insert(After(after.index));
    }
    if let Some(owner) = &forward.owner {
        parts.extensions.insert(SessionOwner::new(owner.clone()));
    }
    // The forwarded request's own edge: the client's headers, as the asking node passed them.
    let transport = TransportHeaders::read(&parts.headers);
    let answer = match parts.method {
        Method::POST => post::accept_body(server, parts, &transport, bytes, Some(forward)).await,
        Method::GET => get_(server, &parts, &transport, &forward).await,
        Method::DELETE => delete(server, &transport, &forward).await,
        _ => Err(Reject::new(
            Kind::MethodNotAllowed,
            "not a method of the nodes",
        )),
    };
    answer.unwrap_or_else(|reject| reject.into_response("GET, POST, DELETE"))
}

async fn get_(
    server: &Server,
    parts: &http::request::Parts,
    transport: &TransportHeaders,
    forward: &Forward,
) -> Result<Response<ResponseBody>, Reject> {
    let id = checks::named(transport, "GET")?;
    let after = get::last_event_id(parts)?;
    match held(server, id, forward).await? {
        Some(session) => get::serve(&session, after).await,
        None => Ok(refused("not-here")),
    }
}

async fn delete(
    server: &Server,
    transport: &TransportHeaders,
    forward: &Forward,
) -> Result<Response<ResponseBody>, Reject> {
    let id = checks::named(transport, "DELETE")?;
    match held(server, id, forward).await? {
        Some(session) => Ok(delete::delete(&session).await),
        None => Ok(refused("not-here")),
    }
}
