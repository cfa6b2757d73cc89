//! The per-request lane (M7): one request of the 2026-07-28 protocol, its POST with the headers
//! mirrored from the body, what a per-request server answers when it refuses it, and its
//! cancellation by closing its response stream; and the re-list after a -32020 (M8).

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};

use mcp_jsonrpc::{ErrorObject, Id, Notification, RawValue, Request, to_raw_value};
use mcp_streamable_protocol::ProtocolVersion;
use mcp_streamable_protocol::codes::{HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION};
use serde::Deserialize;

use crate::error::Error;
use crate::headers;
use crate::read::{self, Recovery, Resend, Tracker};
use crate::shape::{self, Choice, MetaHeaders};
use crate::state::{Entry, Inner};
use crate::wire::{Answer, Body, NO_SESSION};

/// How a request's `_meta` is made.
#[derive(Debug)]
pub(crate) enum Shape {
    /// The application wrote it, declaring this version.
    AsIs(String),
    /// The transport fills it in, declaring this version.
    Fill(ProtocolVersion),
}

/// What one exchange says of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It speaks the per-request protocol, in this version: a request the transport shaped was
    /// answered, or refused the way only a per-request server refuses.
    PerRequest(ProtocolVersion),
    /// It speaks the session-based protocol, in this version at best (a probe only).
    Session(ProtocolVersion),
    /// Nothing learnt: the application shaped the request, or cancelled it before its answer.
    Nothing,
}

/// Sends a request the per-request way and reads its reply in a task of its own. A refusal
/// carrying a JSON-RPC error is delivered as the request's error response. After a -32022, a
/// request whose `_meta` the transport fills is retried with the newest version the server
/// lists that this client speaks. When `probe`, a refusal that is not a per-request one (or a
/// -32022 listing only session-based versions) is not delivered but returned as
/// [`Verdict::Session`], for the caller to fall back.
pub(crate) async fn request(
    inner: &Arc<Inner>,
    request: Request,
    shape: Shape,
    probe: bool,
) -> Result<Verdict, Error> {
    let mut ticket = Ticket::new(inner, &request.id);
    let mut relisted = false;
    let mut version = match shape {
        Shape::AsIs(version) => {
            let mut request = request;
            loop {
                let meta = meta_headers(inner, &request, &version)?;
                let Some((sent, status, error)) = send(inner, request, meta, &mut ticket).await?
                else {
                    return Ok(Verdict::Nothing);
                };
                if !relisted && needs_relist(&sent.method, status, &error) {
                    relisted = true;
                    Box::pin(relist(inner, &version)).await;
                    request = sent;
                    continue;
                }
                deliver_refusal(inner, sent.id, error).await;
                return Ok(Verdict::Nothing);
            }
        }
        Shape::Fill(version) => version,
    };
    let mut tries = 0;
    loop {
        // A new request around the filled params: the application's params are not copied.
        let params = shape::fill(
            request.params.as_deref(),
            version.as_str(),
            &inner.config().identity,
        )?;
        let sent = Request::new(request.id.clone(), request.method.clone(), Some(params));
        let meta = meta_headers(inner, &sent, version.as_str())?;
        let refused = match send(inner, sent, meta, &mut ticket).await {
            Err(e) if probe && matches!(e.status().map(|s| s.as_u16()), Some(400 | 404 | 405)) => {
                tracing::debug!(error = %e, "not a 2026-07-28 refusal");
                return Ok(Verdict::Session(ProtocolVersion::LATEST_SESSION));
            }
            refused => refused?,
        };
        let Some((sent, status, error)) = refused else {
            return Ok(if ticket.is_cancelled() {
                Verdict::Nothing
            } else {
                Verdict::PerRequest(version)
            });
        };
        if status == StatusCode::BAD_REQUEST && error.code == UNSUPPORTED_PROTOCOL_VERSION {
            match shape::choose(&error) {
                // Each version once, and the one refused once more: a server behind a load
                // balancer may be mid-upgrade.
                Choice::PerRequest(next) if tries < ProtocolVersion::PER_REQUEST.len() => {
                    tracing::debug!(%next, "server refused the protocol version; retrying");
                    tries += 1;
                    version = next;
                    continue;
                }
                Choice::Session(version) if probe => return Ok(Verdict::Session(version)),
                _ => {}
            }
        }
        if !relisted && needs_relist(&sent.method, status, &error) {
            relisted = true;
            Box::pin(relist(inner, version.as_str())).await;
            continue;
        }
        if probe && !shape::is_per_request_refusal(status, error.code) {
            tracing::debug!(%status, code = error.code, "not a 2026-07-28 refusal");
            return Ok(Verdict::Session(ProtocolVersion::LATEST_SESSION));
        }
        deliver_refusal(inner, sent.id, error).await;
        return Ok(Verdict::PerRequest(version));
    }
}

/// The headers `request` mirrors in protocol `version`, with the `Mcp-Param-*` of a
/// `tools/call` from what the listed tools declare (M8).
fn meta_headers(inner: &Inner, request: &Request, version: &str) -> Result<MetaHeaders, Error> {
    let params = request.params.as_deref();
    let mut meta = MetaHeaders::new(&request.method, params, version)?;
    if request.method == shape::TOOLS_CALL {
        meta.params = inner.tools().headers_for(params);
    }
    Ok(meta)
}

/// Whether a refusal of `method` is a -32020 of a `tools/call`, which a re-list may mend: the
/// tool was not listed yet, or its declarations changed since (M8).
fn needs_relist(method: &str, status: StatusCode, error: &ErrorObject) -> bool {
    method == shape::TOOLS_CALL
        && status == StatusCode::BAD_REQUEST
        && error.code == HEADER_MISMATCH
}

/// A refusal of a request: the request, the status and the JSON-RPC error.
type Refusal = (Request, StatusCode, ErrorObject);

/// POSTs `sent` and, when it is accepted, reads its reply in a task of its own. Returns the
/// refusal when the server refused it with a JSON-RPC error, `None` when it was accepted or
/// cancelled. A probe's plain 400, 404 or 405 comes back as an error the caller reads.
async fn send(
    inner: &Arc<Inner>,
    sent: Request,
    meta: MetaHeaders,
    ticket: &mut Ticket,
) -> Result<Option<Refusal>, Error> {
    let body = Bytes::from(sent.to_vec());
    let answer = tokio::select! {
        biased;
        () = ticket.cancelled() => return Ok(None),
        answer = inner.http.post_per_request(body, &meta) => answer,
    };
    match answer {
        Answer::Success(response) => {
            read_reply(inner, response, sent, meta, ticket.take())?;
            Ok(None)
        }
        Answer::Refused { status, error, .. } => Ok(Some((sent, status, error))),
        Answer::Failed(e) => Err(e),
    }
}

async fn deliver_refusal(inner: &Inner, id: Id, error: ErrorObject) {
    tracing::debug!(code = error.code, "server refused the request");
    let response = mcp_jsonrpc::Response::error(Some(id), error);
    inner.deliver(Ok(response.into())).await;
}

/// Reads the reply to the request `sent` in a task of its own, until its response, its
/// cancellation or the end of the connection.
fn read_reply(
    inner: &Arc<Inner>,
    response: Response<Body>,
    sent: Request,
    meta: MetaHeaders,
    mut ticket: Ticket,
) -> Result<(), Error> {
    if response.status() == StatusCode::ACCEPTED {
        // S4 forbids it, and no other stream could carry the response.
        tracing::warn!("server answered a request with 202 Accepted");
        let inner = inner.clone();
        tokio::spawn(async move {
            let reason = "the server accepted the request without answering it";
            inner.answer_lost(sent.id, reason).await;
        });
        return Ok(());
    }
    let tracker = Tracker::new(Some(sent.id.clone()));
    let recovery = Recovery::Resend(Box::new(Resend::new(sent, meta)));
    let format = headers::format(response.headers());
    let reading = read::reader(
        format,
        inner,
        response,
        NO_SESSION.clone(),
        tracker,
        recovery,
    )?;
    if let Some(reading) = reading {
        tokio::spawn(async move {
            tokio::select! {
                biased;
                // Dropping the body closes its connection: the server's signal (M6).
                () = ticket.cancelled() => tracing::debug!(id = %ticket.id, "response stream closed"),
                () = reading => {}
            }
        });
    }
    Ok(())
}

/// Sends a notification the per-request way; a 202 is success.
pub(crate) async fn notify(
    inner: &Arc<Inner>,
    notification: Notification,
    version: &str,
) -> Result<(), Error> {
    let meta = MetaHeaders::new(
        &notification.method,
        notification.params.as_deref(),
        version,
    )?;
    let body = Bytes::from(notification.to_vec());
    match inner.http.post_per_request(body, &meta).await {
        Answer::Success(response) => {
            read::accept(inner, response, NO_SESSION.clone(), Tracker::new(None))
        }
        Answer::Refused { failure, .. } | Answer::Failed(failure) => Err(failure),
    }
}

/// Cancels the request `id` if it is a per-request one in flight: its stream or its POST is
/// dropped, which closes the connection carrying it. Returns whether there was one.
pub(crate) fn cancel(inner: &Inner, id: &Id) -> bool {
    inner.in_flight().cancel(id)
}

/// A request's place among those in flight, which it leaves when dropped.
#[derive(Debug)]
struct Ticket {
    inner: Arc<Inner>,
    id: Id,
    /// `None` when another request in flight has the same id: only that one can be cancelled.
    entry: Option<Entry>,
    cancelled: bool,
}

impl Ticket {
    fn new(inner: &Arc<Inner>, id: &Id) -> Ticket {
        let entry = inner.in_flight().enter(id);
        Ticket {
            inner: inner.clone(),
            id: id.clone(),
            entry,
            cancelled: false,
        }
    }

    /// Resolves when the request is cancelled.
    async fn cancelled(&mut self) {
        match &mut self.entry {
            Some((_, cancelled)) => {
                let _ = cancelled.await;
                self.cancelled = true;
            }
            None => std::future::pending().await,
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    /// The ticket, for the task that reads the reply; this one is left empty.
    fn take(&mut self) -> Ticket {
        Ticket {
            inner: self.inner.clone(),
            id: self.id.clone(),
            entry: self.entry.take(),
            cancelled: false,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some((generation, _)) = &self.entry {
            self.inner.in_flight().leave(&self.id, *generation);
        }
    }
}

// Listing the tools again when a server refuses a `tools/call` with -32020 (M8): the tool was
// not listed yet, or its `Mcp-Param-*` declarations changed since it was. The transport sends
// its own `tools/list`, through every page, learns the declarations from the results, and the
// caller retries the call once.

/// How many pages a re-list reads at most. The refused tool may be on any page, so the re-list
/// follows the cursors; a server whose cursors never end would hold the call forever, and 32
/// pages are far more than any server this was tried with lists.
const MAX_PAGES: usize = 32;

/// Lists the tools in protocol `version`, page after page, so that the connection learns their
/// declarations. Whatever goes wrong ends the re-list: the retry then goes with what is known,
/// and a second refusal reaches the application.
pub(crate) async fn relist(inner: &Arc<Inner>, version: &str) {
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let Some(next) = page(inner, version, cursor.as_deref()).await else {
            return;
        };
        cursor = Some(next);
    }
    tracing::warn!(
        pages = MAX_PAGES,
        "tools/list still had pages; stopped reading them"
    );
}

/// Lists one page; returns the next page's cursor, `None` after the last page or a failure.
async fn page(inner: &Arc<Inner>, version: &str, cursor: Option<&str>) -> Option<String> {
    let id = Id::String(format!(
        "mcp-streamable-client/tools-list-{}",
        inner.tools().next_list()
    ));
    let params = list_params(cursor)?;
    let params = shape::fill(Some(&params), version, &inner.config().identity).ok()?;
    let list = Request::new(id.clone(), shape::TOOLS_LIST, Some(params));
    let answer = inner.expect_response(&id);
    inner.tools().expect_list(&id);
    let shape = Shape::AsIs(version.to_owned());
    if let Err(e) = request(inner, list, shape, false).await {
        tracing::debug!(error = %e, "tools/list to learn the tools' headers failed");
        inner.forget_caller(&id);
        inner.tools().forget_list(&id);
        return None;
    }
    let response = answer.await.ok()?;
    next_cursor(response.result().ok()?)
}

fn list_params(cursor: Option<&str>) -> Option<Box<RawValue>> {
    let params = match cursor {
        Some(cursor) => serde_json::json!({ "cursor": cursor }),
        None => serde_json::json!({}),
    };
    to_raw_value(&params).ok()
}

/// The `nextCursor` of a `tools/list` result, if it has one.
fn next_cursor(result: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Page {
        #[serde(rename = "nextCursor", default)]
        next_cursor: Option<String>,
    }
    serde_json::from_str::<Page>(result.get()).ok()?.next_cursor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_the_cursor() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert_eq!(
            next_cursor(&raw(r#"{"tools":[],"nextCursor":"p2"}"#)),
            Some("p2".to_owned())
        );
        assert_eq!(next_cursor(&raw(r#"{"tools":[]}"#)), None);
        assert_eq!(next_cursor(&raw(r#"{"tools":[],"nextCursor":null}"#)), None);
        assert_eq!(list_params(Some("c")).unwrap().get(), r#"{"cursor":"c"}"#);
        assert_eq!(list_params(None).unwrap().get(), "{}");
    }
}
