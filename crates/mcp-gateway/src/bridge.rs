//! The `connect` direction: a local connection (stdio, for a host that only runs stdio
//! servers) relayed to a remote one (our Streamable HTTP client), both ways, until either ends.

use mcp_jsonrpc::{ErrorObject, INITIALIZE, Id, Message, Response, code};
use mcp_transport::{Connection, Outgoing, Sender};
use tokio::task::JoinSet;

/// Relays every message of `local` to `remote` and back until either ends, then closes both.
///
/// `initialize` is sent, and its answer relayed, before anything else is read: the session
/// exists for what follows, and a host that writes its first messages at once reads the answer
/// to `initialize` first (the remote side may answer concurrent requests in any order). Later
/// requests are sent each on a task of its own, so that a slow one (whose reply may
/// start only with its answer) holds no other back; notifications and responses go in the
/// order they came. A request the remote side refuses to carry (the server is gone, the
/// session expired) is answered locally with a JSON-RPC error (-32603) saying why, so that the
/// local side never waits for an answer that cannot come.
///
/// ```no_run
/// use mcp_streamable_client::Client;
/// use mcp_transport::{Transport, stdio::Stdio};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let remote = Client::builder("http://127.0.0.1:8080/mcp").build()?.connect().await?;
/// let local = Stdio::new().connect().await?;
/// mcp_gateway::bridge(local, remote).await?;
/// # Ok(())
/// # }
/// ```
pub async fn bridge<L: Connection, R: Connection>(
    mut local: L,
    mut remote: R,
) -> Result<(), mcp_transport::Error> {
    let (to_local, to_remote) = (local.sender(), remote.sender());
    let mut sends = JoinSet::new();
    let ended = loop {
        tokio::select! {
            message = local.recv() => match message {
                Ok(Some(message)) => {
                    let Some(id) = outbound(message, &to_remote, &to_local, &mut sends).await else {
                        continue;
                    };
                    match relay_until_answered(&mut remote, &to_local, &id).await {
                        Ok(true) => {}
                        Ok(false) => break Ok(()),
                        Err(e) => break Err(e),
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) if e.is_recoverable() => tracing::warn!(error = %e, "a local message skipped"),
                Err(e) => break Err(e),
            },
            message = remote.recv() => match message {
                Ok(Some(message)) => to_local.send(Outgoing::new(message)).await?,
                Ok(None) => break Ok(()),
                Err(e) if e.is_recoverable() => tracing::warn!(error = %e, "a remote message skipped"),
                Err(e) => break Err(e),
            },
            Some(_) = sends.join_next(), if !sends.is_empty() => {}
        }
    };
    sends.shutdown().await;
    let _ = remote.close().await;
    let _ = local.close().await;
    ended
}

/// Sends a local message to the remote side: a request other than `initialize` on a task of
/// its own, the rest in order. Returns the id of an `initialize` the remote side took, whose
/// answer is then to be awaited.
async fn outbound<S: Sender, T: Sender>(
    message: Message,
    remote: &S,
    local: &T,
    sends: &mut JoinSet<()>,
) -> Option<Id> {
    let initialize = match &message {
        Message::Request(r) if r.method == INITIALIZE => Some(r.id.clone()),
        Message::Request(_) => {
            let (remote, local) = (remote.clone(), local.clone());
            sends.spawn(async move {
                send(message, &remote, &local).await;
            });
            return None;
        }
        _ => None,
    };
    let sent = send(message, remote, local).await;
    initialize.filter(|_| sent)
}

/// Relays the remote side's messages to the local one until the answer to `id` has gone
/// through. False if the remote side ended first. The wait is as long as the remote side's:
/// our client answers every request it took, with an error when the response is lost or late
/// (its request timeout).
async fn relay_until_answered<R: Connection, T: Sender>(
    remote: &mut R,
    local: &T,
    id: &Id,
) -> Result<bool, mcp_transport::Error> {
    loop {
        let message = match remote.recv().await {
            Ok(Some(message)) => message,
            Ok(None) => return Ok(false),
            Err(e) if e.is_recoverable() => {
                tracing::warn!(error = %e, "a remote message skipped");
                continue;
            }
            Err(e) => return Err(e),
        };
        let answered = matches!(&message, Message::Response(r) if r.id() == Some(id));
        local.send(Outgoing::new(message)).await?;
        if answered {
            return Ok(true);
        }
    }
}

/// Sends `message`; a request that could not be sent is answered locally with the reason.
/// Whether the remote side took it.
async fn send<S: Sender, T: Sender>(message: Message, remote: &S, local: &T) -> bool {
    let id = message.request_id().cloned();
    let Err(e) = remote.send(Outgoing::new(message)).await else {
        return true;
    };
    tracing::warn!(error = %e, "a message could not be sent to the server");
    if let Some(id) = id {
        let why = ErrorObject::new(code::INTERNAL_ERROR, error_chain(&e));
        let _ = local
            .send(Outgoing::new(Response::error(Some(id), why)))
            .await;
    }
    false
}

/// The error and its causes, one sentence: what the local side reads.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_jsonrpc::Request;
    use mcp_transport::memory;

    use super::*;

    fn answer(id: &Id) -> Message {
        Response::success(
            id.clone(),
            serde_json::value::RawValue::from_string("{}".into()).unwrap(),
        )
        .into()
    }

    /// A host that writes `initialize` and a call at once reads the answer to `initialize`
    /// first, even when the remote side would answer the call sooner.
    #[tokio::test]
    async fn a_pipelined_call_is_sent_only_after_initialize_is_answered() {
        let (mut host, local) = memory::pair();
        let (remote, mut server) = memory::pair();
        let bridged = tokio::spawn(bridge(local, remote));
        let host_sends = host.sender();
        host_sends
            .send(Request::new(1, INITIALIZE, None).into())
            .await
            .unwrap();
        host_sends
            .send(Request::new(2, "tools/call", None).into())
            .await
            .unwrap();
        let Some(Message::Request(initialize)) = server.recv().await.unwrap() else {
            panic!("initialize first");
        };
        // A server whose answer to `initialize` is late: the call, if the bridge sent it
        // already, is answered first.
        let early = tokio::time::timeout(Duration::from_millis(200), server.recv()).await;
        let replies = server.sender();
        if let Ok(Ok(Some(Message::Request(call)))) = &early {
            replies.send(answer(&call.id).into()).await.unwrap();
        }
        replies.send(answer(&initialize.id).into()).await.unwrap();
        if early.is_err() {
            let Some(Message::Request(call)) = server.recv().await.unwrap() else {
                panic!("the call after initialize's answer");
            };
            replies.send(answer(&call.id).into()).await.unwrap();
        }
        for id in [1, 2] {
            let Some(Message::Response(r)) = host.recv().await.unwrap() else {
                panic!("an answer");
            };
            assert_eq!(r.id(), Some(&Id::from(id)));
        }
        host.close().await.unwrap();
        bridged.await.unwrap().unwrap();
    }
}
