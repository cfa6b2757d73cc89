//! The body of an answer, whichever way it came: from hyper-util's client, whose connection
//! task feeds it, or from a connection of the [`Pool`](super::pool::Pool), which reading the
//! body drives.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;

use super::h1::H1Error;
use super::pool::PooledBody;

/// The body of an answer.
#[derive(Debug)]
pub(crate) struct Body(Source);

#[derive(Debug)]
enum Source {
    Client(Incoming),
    Pooled(PooledBody),
}

/// Why a body could not be read to its end.
#[derive(Debug)]
pub(crate) enum BodyError {
    Client(hyper::Error),
    Pooled(H1Error),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Client(e) => e.fmt(f),
            BodyError::Pooled(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BodyError::Client(e) => Some(e),
            BodyError::Pooled(e) => Some(e),
        }
    }
}

impl Body {
    /// A body whose connection is someone else's to drive.
    pub(crate) fn new(incoming: Incoming) -> Body {
        Body(Source::Client(incoming))
    }

    /// A body read from a leased connection, which goes back to the pool at its end.
    pub(crate) fn pooled(body: PooledBody) -> Body {
        Body(Source::Pooled(body))
    }

    /// Whether reading the body drives its connection, rather than a task of the connection's
    /// own: data that came with the head is then there without waiting for another task.
    pub(crate) fn drives_connection(&self) -> bool {
        matches!(self.0, Source::Pooled(_))
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match &mut self.get_mut().0 {
            Source::Client(incoming) => {
                Pin::new(incoming).poll_frame(cx).map_err(BodyError::Client)
            }
            Source::Pooled(body) => body
                .poll_data(cx)
                .map(|data| data.map(|data| data.map(Frame::data).map_err(BodyError::Pooled))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Source::Client(incoming) => incoming.is_end_stream(),
            Source::Pooled(body) => body.is_done(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Source::Client(incoming) => incoming.size_hint(),
            Source::Pooled(body) => body
                .remaining()
                .map_or_else(SizeHint::default, SizeHint::with_exact),
        }
    }
}
