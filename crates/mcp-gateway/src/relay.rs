//! One client request relayed to a child and its answer back, whichever family the client
//! speaks: progress on the request's stream as it comes, then the response, or the JSON-RPC
//! error that says why there is none (the child failed, or did not answer in time).

use std::time::Duration;

use mcp_jsonrpc::{Id, Message, Request, Response};
use mcp_streamable_server::ServerSender;
use mcp_transport::{Outgoing, Sender};
use tokio::time::Instant;

use crate::error::Error;
use crate::link::{Call, Link};

/// Sends `request` over `link` and relays what comes back for it to `client`, related to the
/// request; the response last, or the error that says why there is none, which is returned
/// too. Nothing is sent when the client cancelled the request.
pub(crate) async fn relay(
    link: &Link,
    request: Request,
    client: &ServerSender,
    timeout: Duration,
) -> Result<(), Error> {
    let id = request.id.clone();
    let finished = match link.call(request).await {
        Ok(mut call) => finish(&mut call, &id, client, timeout).await,
        Err(why) => Err(why),
    };
    reply(client, &id, finished.clone()).await;
    finished.map(drop)
}

/// Relays what comes back for `call`, the client's request `id`, to `client`; the response
/// last. A task of its own per call: the request was written to the child in the client's
/// order before it was handed here.
pub(crate) async fn conclude(mut call: Call, id: Id, client: &ServerSender, timeout: Duration) {
    let finished = finish(&mut call, &id, client, timeout).await;
    reply(client, &id, finished).await;
}

/// Sends the client what `finished` says: the child's response, or the error for `id`.
pub(crate) async fn reply(
    client: &ServerSender,
    id: &Id,
    finished: Result<Option<Response>, Error>,
) {
    match finished {
        Ok(Some(response)) => answer(client, response).await,
        Ok(None) => {}
        Err(why) => answer(client, refusal(id, &why)).await,
    }
}

/// Relays `call`'s progress to `client` until its response, which it returns; `None` when it
/// was cancelled; the error when the child failed or did not answer in time (then it is told
/// the call was cancelled).
pub(crate) async fn finish(
    call: &mut Call,
    id: &Id,
    client: &ServerSender,
    timeout: Duration,
) -> Result<Option<Response>, Error> {
    let deadline = Instant::now() + timeout;
    loop {
        let next = tokio::time::timeout_at(deadline, call.next()).await;
        match next {
            Ok(Ok(Some(Message::Response(response)))) => return Ok(Some(response)),
            Ok(Ok(Some(message))) => {
                let related = Outgoing::new(message).related_to(id.clone());
                let _ = client.send(related).await;
            }
            Ok(Ok(None)) => return Ok(None),
            Ok(Err(why)) => return Err(why),
            Err(_elapsed) => {
                let why = Error::Timeout(timeout);
                call.cancel(&why.to_string()).await;
                return Err(why);
            }
        }
    }
}

/// The error response for request `id` that `why` left unanswered.
pub(crate) fn refusal(id: &Id, why: &Error) -> Response {
    Response::error(Some(id.clone()), why.to_error_object())
}

/// Sends `response` to the client; a session already over has nobody to read it.
pub(crate) async fn answer(client: &ServerSender, response: Response) {
    if let Err(e) = client.send(Outgoing::new(response)).await {
        tracing::debug!(error = %e, "an answer found its client gone");
    }
}
