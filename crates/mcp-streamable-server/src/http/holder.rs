//! The holder's side: answering what other nodes forward about the sessions this node holds.
//! A POST's messages are delivered as if posted here, their stream read by nobody here (the
//! asking node follows it from the store); a standalone GET makes this node drain the stream
//! (its messages are in the store) until another reader takes it over.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_jsonrpc::Body;

use crate::core::Session;
use crate::core::owner::SessionOwner;
use crate::core::reader::{OnEnd, Reader};
use crate::core::session::Ending;
use crate::core::state::Posted;
use crate::http::app::Server;
use crate::http::checks;
use crate::http::envelope::{Answer, Envelope, Parts};
use crate::http::error::Reject;

/// Starts answering other nodes' envelopes, once per service with a cluster.
pub(crate) fn start(server: &Arc<Server>) {
    if server.relay.inbox_started.swap(true, Ordering::AcqRel) {
        return;
    }
    let Some(mut inbox) = server.ctx.config.cluster.as_ref().and_then(|c| c.inbox()) else {
        return;
    };
    let weak = Arc::downgrade(server);
    tokio::spawn(async move {
        while let Some(forwarded) = inbox.recv().await {
            let Some(server) = weak.upgrade() else {
                return;
            };
            tokio::spawn(async move {
                let answer = match serde_json::from_slice::<Envelope>(&forwarded.envelope) {
                    Ok(envelope) => answer(&server, envelope).await.unwrap_or_else(Answer::from),
                    Err(err) => Reject::bad_request(format!("unreadable envelope: {err}")).into(),
                };
                let _ = forwarded.reply.send(answer.to_bytes());
            });
        }
    });
}

async fn answer(server: &Arc<Server>, envelope: Envelope) -> Result<Answer, Reject> {
    if let Some(id) = envelope.session()
        && server.ctx.sessions.get(id).is_none()
    {
        // Handed over, or ended: the asking node looks the session up again.
        return Ok(Answer::NotHere);
    }
    match envelope {
        Envelope::Post {
            session,
            owner,
            version,
            body,
            parts,
        } => {
            let session = held(server, &session, owner).await?;
            post(&session, version, body.get().as_bytes(), &parts).await
        }
        Envelope::Standalone {
            session,
            owner,
            node,
            token,
        } => {
            let session = held(server, &session, owner).await?;
            standalone(server, &session, node, token).await
        }
        Envelope::Leave { node, token, .. } => {
            server.relay.end_drain(&node, token);
            Ok(Answer::Done)
        }
        Envelope::Moved { token } => {
            server.relay.moved(token);
            Ok(Answer::Done)
        }
        Envelope::Delete { session, owner } => {
            held(server, &session, owner)
                .await?
                .close(Ending::Abort)
                .await;
            Ok(Answer::Done)
        }
    }
}

/// The session `id`, held here, for a request of `owner` (S7).
async fn held(server: &Server, id: &str, owner: Option<String>) -> Result<Arc<Session>, Reject> {
    let owner = owner.map(SessionOwner::new);
    Ok(server.ctx.find_session(id, owner.as_ref()).await?)
}

/// A POST's messages, delivered as if posted here; their stream is stored, read by nobody here.
async fn post(
    session: &Arc<Session>,
    version: Option<String>,
    bytes: &[u8],
    parts: &Parts,
) -> Result<Answer, Reject> {
    let body: Body = mcp_jsonrpc::parse(bytes).map_err(|e| Reject::from_parse(&e))?;
    let parts = parts.to_http();
    let version = match version {
        Some(_) => checks::protocol_version(&parts.headers)?,
        None => None,
    };
    let ctx = &session.ctx;
    let charge = ctx
        .inbound
        .charge(bytes.len())
        .ok_or_else(|| crate::core::Error::InboundFull(ctx.inbound.total()))?;
    let begun = session.begin(&body, version, None, OnEnd::Keep)?;
    let prime = begun.prime;
    let reader = begun
        .deliver(Posted::new(Arc::new(parts), body, charge))
        .await?;
    Ok(match reader {
        None => Answer::Accepted,
        // Dropped: the stream is stored only, for the asking node to follow (S13).
        Some(reader) => Answer::Stream {
            stream: reader.stream(),
            prime,
        },
    })
}

/// A standalone stream read by `node` from the store: this node takes what it queues and
/// lets it go (it is stored), until another reader takes the stream over or the session ends;
/// then `node` is told, so that its client's stream ends too.
async fn standalone(
    server: &Arc<Server>,
    session: &Arc<Session>,
    node: String,
    token: u64,
) -> Result<Answer, Reject> {
    let attached = session.attach_standalone().await?;
    let answer = Answer::Standalone {
        prime: attached.priming.is_some(),
        before: attached.before,
    };
    let weak = Arc::downgrade(server);
    let relay_node = node.clone();
    let drain = tokio::spawn(async move {
        drain(attached.reader).await;
        let Some(server) = weak.upgrade() else {
            return;
        };
        server.relay.drained(&node, token);
        if let Some(cluster) = &server.ctx.config.cluster {
            let moved = Envelope::Moved { token }.to_bytes();
            if let Err(err) = cluster.forward(&node, moved).await {
                tracing::debug!(error = %err, node, "could not tell a node its standalone stream moved");
            }
        }
    });
    server
        .relay
        .add_drain(relay_node, token, drain.abort_handle());
    Ok(answer)
}

/// Takes what the stream queues until it ends: its messages are in the store already.
async fn drain(mut reader: Reader) {
    while std::future::poll_fn(|cx| reader.poll_take(cx, usize::MAX))
        .await
        .is_some()
    {}
}
