//! A request body that must arrive whole before a deadline.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::serve::watch::{Abandon, Watch};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that fails with an `io::ErrorKind::TimedOut` error when it has not ended by
/// its deadline, which the service answers 408. One deadline for the whole body, not one per
/// chunk: a peer sending a byte a second would never miss a per-chunk one.
///
/// A body that fails by itself was abandoned by its peer (an HTTP/2 stream reset, a connection
/// closed mid-body): that counts against the connection's reset budget.
#[derive(Debug)]
pub(crate) struct TimedBody<B> {
    inner: B,
    deadline: Pin<Box<Sleep>>,
    ended: bool,
    abandon: (Abandon, Arc<Watch>),
}

impl<B> TimedBody<B> {
    pub(crate) fn new(inner: B, deadline: Instant, abandon: (Abandon, Arc<Watch>)) -> Self {
        TimedBody {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            ended: false,
            abandon,
        }
    }
}

impl<B> Body for TimedBody<B>
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            self.ended = !matches!(frame, Some(Ok(_)));
            if matches!(frame, Some(Err(_))) {
                let (abandon, watch) = &self.abandon;
                abandon.record(watch);
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.ended = true;
            let timeout = io::Error::new(io::ErrorKind::TimedOut, "request body read timed out");
            return Poll::Ready(Some(Err(timeout.into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};

    use super::*;

    /// A body that sends one byte, then nothing, never ending: a trickling client.
    struct Stalled(Option<Bytes>);

    impl Body for Stalled {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            match self.0.take() {
                Some(bytes) => Poll::Ready(Some(Ok(Frame::data(bytes)))),
                None => Poll::Pending,
            }
        }
    }

    fn watch() -> (Abandon, Arc<Watch>) {
        Arc::new(Watch::new(10)).begin().abandon_handle()
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_does_not_end_in_time_fails_as_timed_out() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut body = TimedBody::new(Stalled(Some(Bytes::from_static(b"{"))), deadline, watch());
        assert!(body.frame().await.unwrap().is_ok());
        let err = body.frame().await.unwrap().unwrap_err();
        let io = err.downcast_ref::<io::Error>().unwrap();
        assert_eq!(io.kind(), io::ErrorKind::TimedOut);
        assert!(body.frame().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_in_time_is_passed_through() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let body = TimedBody::new(Full::new(Bytes::from_static(b"{}")), deadline, watch());
        assert_eq!(body.collect().await.unwrap().to_bytes(), "{}");
    }
}
