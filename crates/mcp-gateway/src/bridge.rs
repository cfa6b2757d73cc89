//! The `connect` direction: a local connection (stdio, for a host that only runs stdio
//! servers) relayed to a remote one (our Streamable HTTP client), both ways, until either ends.

use mcp_jsonrpc::{ErrorObject, Message, Response, code};
use mcp_transport::{Connection, Outgoing, Sender};
use tokio::task::JoinSet;

/// Relays every message of `local` to `remote` and back until either ends, then closes both.
///
/// `initialize` is sent before anything else is read, so the session exists for what follows;
/// later requests are sent each on a task of its own, so that a slow one (whose reply may
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
                Ok(Some(message)) => outbound(message, &to_remote, &to_local, &mut sends).await,
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
/// its own, the rest in order.
async fn outbound<S: Sender, T: Sender>(
    message: Message,
    remote: &S,
    local: &T,
    sends: &mut JoinSet<()>,
) {
    let concurrent = matches!(&message, Message::Request(r) if r.method != mcp_jsonrpc::INITIALIZE);
    if concurrent {
        let (remote, local) = (remote.clone(), local.clone());
        sends.spawn(async move { send(message, &remote, &local).await });
    } else {
        send(message, remote, local).await;
    }
}

/// Sends `message`; a request that could not be sent is answered locally with the reason.
async fn send<S: Sender, T: Sender>(message: Message, remote: &S, local: &T) {
    let id = message.request_id().cloned();
    let Err(e) = remote.send(Outgoing::new(message)).await else {
        return;
    };
    tracing::warn!(error = %e, "a message could not be sent to the server");
    if let Some(id) = id {
        let why = ErrorObject::new(code::INTERNAL_ERROR, error_chain(&e));
        let _ = local
            .send(Outgoing::new(Response::error(Some(id), why)))
            .await;
    }
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
