//! A session-based client served by a child of its own: started on `initialize`, which it
//! answers, then every message relayed both ways, and stopped when the session ends (DELETE,
//! idle timeout, eviction, shutdown). A child that dies ends its session: the requests waiting
//! on it get errors first; it is not started again.

use mcp_jsonrpc::{Id, Message, Notification};
use mcp_streamable_server::{ServerConnection, ServerSender};
use mcp_transport::{Connection, Outgoing, Sender};
use serde::Deserialize as _;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

use crate::link::Link;
use crate::relay::{answer, conclude, refusal, relay};
use crate::shared::Shared;

/// Runs one session; returns when it is over and its child is gone.
pub(crate) async fn serve(mut conn: ServerConnection, shared: &Shared) {
    let client = conn.sender();
    let label = client.session_id().unwrap_or_default().to_owned();
    // The service hands a session its `initialize` first.
    let Ok(Some(Message::Request(initialize))) = conn.recv().await else {
        return;
    };
    let (link, events) = match shared.start_child(&label) {
        Ok(started) => started,
        Err(why) => {
            tracing::warn!(mcp.session.id = %label, error = %why, "no child for the session");
            return answer(&client, refusal(&initialize.id, &why)).await;
        }
    };
    // The child's own messages go to the client on a task of their own from the start: a
    // write to the child that waits (its stdin full) must not stop its stdout from being read,
    // or a child that writes before it reads would wait on the gateway as the gateway on it.
    let forwarder = tokio::spawn(forward(events, link.clone(), client.clone()));
    let timeout = shared.options.timeout();
    match relay(&link, initialize, &client, timeout).await {
        Ok(()) => run(&mut conn, &client, &link, forwarder, shared).await,
        Err(why) => tracing::warn!(mcp.session.id = %label, error = %why, "initialize failed"),
    }
    link.stop().await;
    tracing::debug!(mcp.session.id = %label, "session over, child stopped");
}

/// Relays the session's messages both ways until the session or the child (whose messages
/// `forwarder` relays) ends.
async fn run(
    conn: &mut ServerConnection,
    client: &ServerSender,
    link: &Link,
    mut forwarder: JoinHandle<()>,
    shared: &Shared,
) {
    let mut calls = JoinSet::new();
    // Whether the forwarder ended (the child's stdout did): its handle must not be polled again.
    let mut forwarded = false;
    loop {
        tokio::select! {
            message = conn.recv() => match message {
                Ok(Some(message)) => from_client(message, link, client, &mut calls, shared).await,
                _ => break,
            },
            _ = &mut forwarder => {
                forwarded = true;
                break;
            }
            Some(_) = calls.join_next(), if !calls.is_empty() => {}
        }
    }
    // The calls still waiting end with the child (their errors sent while the session lasts):
    // stop it, then let them finish.
    link.stop().await;
    if !forwarded {
        let _ = forwarder.await;
    }
    while calls.join_next().await.is_some() {}
}

/// A client's message: a request written to the child at once (so the child reads the
/// client's messages in their order) and its answer awaited on a task of its own, a
/// cancellation translated to the child's id, anything else (notifications, answers to the
/// child's requests) as it is.
async fn from_client(
    message: Message,
    link: &Link,
    client: &ServerSender,
    calls: &mut JoinSet<()>,
    shared: &Shared,
) {
    match message {
        Message::Request(request) => {
            let id = request.id.clone();
            match link.call(request).await {
                Ok(call) => {
                    let (client, timeout) = (client.clone(), shared.options.timeout());
                    calls.spawn(async move { conclude(call, id, &client, timeout).await });
                }
                Err(why) => answer(client, refusal(&id, &why)).await,
            }
        }
        Message::Notification(notification) if notification.method == CANCELLED => {
            cancel(link, &notification).await;
        }
        other => {
            if let Err(why) = link.send(other).await {
                tracing::debug!(error = %why, "a message found the child gone");
            }
        }
    }
}

const CANCELLED: &str = "notifications/cancelled";

async fn cancel(link: &Link, notification: &Notification) {
    let Ok(params) = notification.parse_params::<Value>() else {
        return;
    };
    if let Ok(id) = Id::deserialize(&params["requestId"]) {
        link.cancel(&id, params["reason"].as_str()).await;
    }
}

/// Sends the child's own messages (requests to the client, notifications) to the client until
/// the link ends: each on the stream of the one request in flight if there is one, else on the
/// standalone stream.
async fn forward(mut events: mpsc::Receiver<Message>, link: Link, client: ServerSender) {
    while let Some(message) = events.recv().await {
        let mut outgoing = Outgoing::new(message);
        if let Some(request) = link.sole_call() {
            outgoing = outgoing.related_to(request);
        }
        if let Err(e) = client.send(outgoing).await {
            tracing::debug!(error = %e, "a message of the child found no client");
        }
    }
}
