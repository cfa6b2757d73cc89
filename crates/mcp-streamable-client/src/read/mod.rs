//! The readers of the server's replies: the answer to a POST is accepted (202), a JSON body, or
//! an SSE stream (C2), read in a task of its own (a JSON body that came whole with its head is
//! read at once). A reader is handed the [`Tracker`] of the request it must answer and the
//! [`Recovery`] to use when its stream breaks; it knows nothing of the lanes that send.

mod json;
mod recovery;
mod silence;
mod sse;
mod tracker;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use http::{Response, StatusCode};

use crate::error::{Error, Kind};
use crate::headers::{self, Format};
use crate::state::Inner;
use crate::wire::{Body, SessionHeaders};

pub(crate) use recovery::{Recovery, Resend};
pub(crate) use sse::SseStream;
pub(crate) use tracker::Tracker;

/// A reader at work, boxed once so that spawning it moves a pointer, not the future.
pub(crate) type Reading = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Takes the answer to a POST sent in `session`: reads its body in a task of its own when it
/// has one, so that the send resolves as soon as the server accepted the message (a JSON body
/// that has already come whole is read at once instead). A broken stream is resumed (C4).
pub(crate) fn accept(
    inner: &Arc<Inner>,
    response: Response<Body>,
    session: SessionHeaders,
    tracker: Tracker,
) -> Result<(), Error> {
    if response.status() == StatusCode::ACCEPTED {
        if !tracker.is_done() {
            // S4 forbids it; a server that does it may answer on the standalone stream.
            tracing::warn!("server answered a request with 202 Accepted");
        }
        return Ok(());
    }
    // A body read from a pooled connection is read here as far as it has come: the sender's
    // task has read what came with the head.
    let format = headers::format(response.headers());
    let inline = format == Format::Json || response.body().drives_connection();
    let reading = reader(format, inner, response, session, tracker, Recovery::Resume)?;
    if let Some(reading) = reading {
        if inline {
            run_or_spawn(reading);
        } else {
            tokio::spawn(reading);
        }
    }
    Ok(())
}

/// Runs `reading` here until it would wait, and gives it a task of its own only then. A JSON
/// reply has usually come whole with its headers (its connection's task read the body with
/// them), as has a short SSE reply on a pooled connection, so it is read and delivered at once,
/// without a task spawned per reply. An SSE stream on a connection driven by hyper-util's task
/// goes on after its first event, and is spawned at once instead.
fn run_or_spawn(mut reading: Reading) {
    // A future that returns pending has registered its waker, here a no-op one: the task
    // polls it again at once, which registers the task's.
    if (&mut reading).now_or_never().is_none() {
        tokio::spawn(reading);
    }
}

/// The reader of a successful answer's body, by its `format` (as [`headers::format`] reads it
/// from the answer); `None` when there is nothing to read (a notification or response answered
/// with some other success).
pub(crate) fn reader(
    format: Format,
    inner: &Arc<Inner>,
    response: Response<Body>,
    session: SessionHeaders,
    tracker: Tracker,
    recovery: Recovery,
) -> Result<Option<Reading>, Error> {
    match format {
        Format::Json => {
            let body = response.into_body();
            Ok(Some(Box::pin(json::read(
                inner.clone(),
                session,
                body,
                tracker,
            ))))
        }
        Format::Sse => {
            let stream = SseStream::for_post(inner.clone(), session, tracker, recovery);
            Ok(Some(Box::pin(stream.run(Some(response.into_body())))))
        }
        Format::Other if tracker.is_done() => Ok(None),
        Format::Other => {
            tracing::warn!(
                content_type = ?response.headers().get(http::header::CONTENT_TYPE),
                "server answered a request with neither JSON nor an event stream"
            );
            Err(Error::new(Kind::ContentType))
        }
    }
}
