//! The HTTP+SSE lane: the fallback to the 2024-11-05 HTTP+SSE transport (C10): GET opens an event stream whose
//! `endpoint` event says where to POST; every reply comes on that stream.
//!
//! That transport has no resumption: when its stream ends, the connection is over. The waiting
//! requests are answered with errors and `recv` ends.

use std::sync::Arc;

use bytes::Bytes;
use http::Uri;
use http::uri::PathAndQuery;
use http_body_util::BodyExt;
use mcp_jsonrpc::{Id, Message};
use mcp_sse::Scanner;

use crate::error::{Deadline, Error, HttpSseFailure, Kind};
use crate::headers::{self, Format};
use crate::state::{HttpSse, Inner};
use crate::wire::{Body, Call, NO_SESSION};

/// The event naming the URL to post to.
const ENDPOINT_EVENT: &str = "endpoint";

/// POSTs `message` to the endpoint; its reply will come on the event stream.
pub(crate) async fn post(
    inner: &Inner,
    http_sse: &HttpSse,
    message: &Message,
) -> Result<(), Error> {
    let id = message.request_id().cloned();
    if let Some(id) = &id {
        http_sse.pending().insert(id.clone());
    }
    let body = Bytes::from(message.to_vec());
    let call = Call::post(inner.config(), &http_sse.endpoint, &NO_SESSION, body);
    match inner.http.execute(&call).await {
        // The body, if any ("Accepted"), says nothing: replies come on the stream.
        Ok(_) => Ok(()),
        Err(e) => {
            if let Some(id) = &id {
                http_sse.pending().remove(id);
            }
            Err(e)
        }
    }
}

/// Opens the HTTP+SSE event stream and waits for its `endpoint` event. If the server does not
/// speak that transport either, the error of the first POST (`post_error`) is the one that
/// says what went wrong.
pub(crate) async fn fallback(inner: &Arc<Inner>, post_error: Error) -> Result<Arc<HttpSse>, Error> {
    tracing::debug!(error = %post_error, "trying the 2024-11-05 HTTP+SSE transport");
    let config = inner.config();
    let call = Call::get(config, &config.url, &NO_SESSION, None);
    let response = match inner.http.execute(&call).await {
        Ok(response) if headers::format(response.headers()) == Format::Sse => response,
        Ok(_) => {
            tracing::debug!("HTTP+SSE GET did not answer with an event stream");
            return Err(post_error);
        }
        Err(e) => {
            tracing::debug!(error = %e, "HTTP+SSE GET failed");
            return Err(post_error);
        }
    };
    let mut body = response.into_body();
    let mut scanner = Scanner::with_max_event_size(config.max_event_size);
    let data = tokio::time::timeout(
        config.request_timeout,
        endpoint_event(&mut body, &mut scanner),
    )
    .await
    .map_err(|_| Error::timeout(Deadline::Endpoint))??;
    let endpoint = resolve(&config.url, &data)?;
    tracing::debug!(%endpoint, "speaking the 2024-11-05 HTTP+SSE transport");
    let http_sse = Arc::new(HttpSse::new(endpoint));
    tokio::spawn(read_stream(inner.clone(), http_sse.clone(), body, scanner));
    Ok(http_sse)
}

/// Reads the stream up to the `endpoint` event, returning its data.
async fn endpoint_event(body: &mut Body, scanner: &mut Scanner) -> Result<String, Error> {
    loop {
        while let Some(event) = scanner.next_event().map_err(|e| {
            Error::new(Kind::TooLarge {
                limit: scanner.max_event_size(),
            })
            .with(e)
        })? {
            if event.name.as_deref() == Some(ENDPOINT_EVENT) {
                return Ok(event.data);
            }
            tracing::debug!("ignoring an event before the endpoint event");
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    scanner.feed(&data);
                }
            }
            Some(Err(e)) => return Err(Error::new(Kind::Body).with(e)),
            None => return Err(Error::new(Kind::HttpSse(HttpSseFailure::Missing))),
        }
    }
}

/// The endpoint named by `reference`, resolved against the server URL `base`. Only the
/// server's own origin is accepted: an event stream must not send the client's messages (and
/// credentials) elsewhere.
pub(crate) fn resolve(base: &Uri, reference: &str) -> Result<Uri, Error> {
    let bad = || Error::new(Kind::HttpSse(HttpSseFailure::Invalid));
    let reference = reference.trim();
    if reference.is_empty() {
        return Err(bad());
    }
    if reference.contains("://") || reference.starts_with("//") {
        let absolute = if reference.starts_with("//") {
            format!("{}:{reference}", base.scheme_str().unwrap_or("http"))
        } else {
            reference.to_owned()
        };
        let uri: Uri = absolute.parse().map_err(|e| bad().with(e))?;
        if uri.scheme() != base.scheme() || uri.authority() != base.authority() {
            return Err(Error::new(Kind::HttpSse(HttpSseFailure::Foreign)));
        }
        return Ok(uri);
    }
    let path = base.path();
    let path_and_query = if reference.starts_with('/') {
        reference.to_owned()
    } else if reference.starts_with('?') {
        format!("{path}{reference}")
    } else {
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{dir}{reference}")
    };
    let path_and_query: PathAndQuery = path_and_query.parse().map_err(|e| bad().with(e))?;
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    Uri::from_parts(parts).map_err(|e| bad().with(e))
}

/// Reads the HTTP+SSE stream after its `endpoint` event: messages are delivered; when the stream
/// ends, the waiting requests get errors and the connection closes.
async fn read_stream(
    inner: Arc<Inner>,
    http_sse: Arc<HttpSse>,
    mut body: Body,
    mut scanner: Scanner,
) {
    let mut shutdown = inner.shutdown_signal();
    let reason = 'stream: loop {
        loop {
            match scanner.next_event() {
                Ok(None) => break,
                Ok(Some(event)) => {
                    if event.data.is_empty()
                        || event.name.as_deref().is_some_and(|n| n != "message")
                    {
                        tracing::debug!(name = ?event.name, "ignoring an event that is not a message");
                        continue;
                    }
                    if !deliver(&inner, &http_sse, &event.data).await {
                        return;
                    }
                }
                Err(e) => {
                    let limit = scanner.max_event_size();
                    tracing::warn!(limit, "server sent an event larger than the limit");
                    let error = Error::new(Kind::TooLarge { limit }).with(e);
                    if !inner.deliver(Err(error.into())).await {
                        return;
                    }
                    // The event cannot be attributed to a request, so none can be answered.
                    break 'stream "the event stream carried an event larger than the limit";
                }
            }
        }
        let frame = tokio::select! {
            biased;
            _ = shutdown.wait_for(|closed| *closed) => return,
            frame = body.frame() => frame,
        };
        match frame {
            None => break "the HTTP+SSE event stream ended",
            Some(Err(e)) => {
                tracing::debug!(error = %e, "HTTP+SSE event stream broken");
                break "the HTTP+SSE event stream broke";
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    scanner.feed(&data);
                }
            }
        }
    };
    tracing::debug!(reason, "HTTP+SSE connection over");
    // An `initialize` of the transport's own is not the application's to hear about; dropping
    // its sender tells the transport.
    let own = http_sse.forget_own_initialize();
    let waiting: Vec<Id> = http_sse.pending().drain().collect();
    for id in waiting.into_iter().filter(|id| Some(id) != own.as_ref()) {
        if !inner.answer_lost(id, reason).await {
            return;
        }
    }
    inner.terminate();
}

/// Delivers the messages of one event; false once nobody reads.
async fn deliver(inner: &Inner, http_sse: &HttpSse, data: &str) -> bool {
    match mcp_jsonrpc::parse(data.as_bytes()) {
        Ok(body) => {
            for msg in body {
                if let Message::Response(response) = &msg
                    && let Some(id) = response.id()
                {
                    http_sse.pending().remove(id);
                }
                if http_sse.take_own(&msg) {
                    continue;
                }
                if !inner.deliver(Ok(msg)).await {
                    return false;
                }
            }
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "server sent an event that is not JSON-RPC");
            inner
                .deliver(Err(Error::new(Kind::InvalidMessage).with(e).into()))
                .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(base: &str, reference: &str) -> Result<String, Error> {
        resolve(&base.parse().unwrap(), reference).map(|u| u.to_string())
    }

    #[test]
    fn resolves_endpoints_against_the_server_url() {
        let base = "http://127.0.0.1:8080/mcp/sse";
        assert_eq!(
            resolved(base, "/messages?sessionId=x").unwrap(),
            "http://127.0.0.1:8080/messages?sessionId=x"
        );
        assert_eq!(
            resolved(base, "messages?sessionId=x").unwrap(),
            "http://127.0.0.1:8080/mcp/messages?sessionId=x"
        );
        assert_eq!(
            resolved(base, "?s=1").unwrap(),
            "http://127.0.0.1:8080/mcp/sse?s=1"
        );
        assert_eq!(
            resolved(base, "http://127.0.0.1:8080/m").unwrap(),
            "http://127.0.0.1:8080/m"
        );
        assert_eq!(resolved("http://h", "m").unwrap(), "http://h/m");
    }

    #[test]
    fn refuses_other_origins_and_garbage() {
        let base = "http://127.0.0.1:8080/sse";
        assert!(resolved(base, "http://evil.example/m").is_err());
        assert!(resolved(base, "https://127.0.0.1:8080/m").is_err());
        assert!(resolved(base, "//evil.example/m").is_err());
        assert!(resolved(base, "").is_err());
        assert!(resolved(base, "/a b").is_err());
    }
}
