//! The body of an answer, whichever way it came: from hyper-util's client, whose connection
//! task feeds it, or from a connection of the [`Pool`](super::pool::Pool), which reading the
//! body drives.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;

use super::pool::Lease;

/// The body of an answer.
pub(crate) struct Body {
    incoming: Incoming,
    /// The pooled connection that carries the body, until the body is done.
    lease: Option<Lease>,
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Body")
            .field("pooled", &self.lease.is_some())
            .finish_non_exhaustive()
    }
}

impl Body {
    /// A body whose connection is someone else's to drive.
    pub(crate) fn new(incoming: Incoming) -> Body {
        Body {
            incoming,
            lease: None,
        }
    }

    /// A body read from the leased connection, which goes back to the pool at its end.
    pub(crate) fn pooled(incoming: Incoming, lease: Lease) -> Body {
        let mut body = Body {
            incoming,
            lease: Some(lease),
        };
        // An answer without a body is done already.
        body.release_if_done();
        body
    }

    /// Whether reading the body drives its connection, rather than a task of the connection's
    /// own: a frame that came with the head is then there without waiting for another task.
    pub(crate) fn drives_connection(&self) -> bool {
        self.lease.is_some()
    }

    fn release_if_done(&mut self) {
        if self.incoming.is_end_stream()
            && let Some(lease) = self.lease.take()
        {
            lease.release();
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let Some(lease) = &mut this.lease else {
            return Pin::new(&mut this.incoming).poll_frame(cx);
        };
        // Only the connection feeds the body, so the body needs no waker: a frame the
        // connection read already (with the head, or at its last poll) is taken as it is, and
        // the connection is driven, with `cx`, only when none is there.
        let mut noop = Context::from_waker(Waker::noop());
        let mut polled = Pin::new(&mut this.incoming).poll_frame(&mut noop);
        if polled.is_pending() {
            lease.drive(cx);
            polled = Pin::new(&mut this.incoming).poll_frame(&mut noop);
        }
        match &polled {
            Poll::Ready(None) => {
                if let Some(lease) = this.lease.take() {
                    lease.release();
                }
            }
            Poll::Ready(Some(Ok(_))) => this.release_if_done(),
            // A connection that failed under a body is not reused.
            Poll::Ready(Some(Err(_))) => this.lease = None,
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}
