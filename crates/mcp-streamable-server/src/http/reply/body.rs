//! The body of every response the service gives.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

use crate::http::reply::sse::SseBody;

/// The body of a response of [`StreamableHttpService`](crate::StreamableHttpService): empty,
/// one JSON document, or an SSE stream that ends when its stream does.
#[derive(Debug)]
pub struct ResponseBody {
    inner: Inner,
}

/// What a body polls for its frames when something else makes them: a relayed stream, polled
/// by its response's connection itself rather than written by a task of its own through a
/// channel (a spawn and a channel less a relayed request).
pub(crate) trait Frames: Send + Sync {
    /// The next frame, or `None` at the stream's end.
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;
}

impl std::fmt::Debug for dyn Frames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Frames")
    }
}

#[derive(Debug)]
enum Inner {
    Full(Option<Bytes>),
    /// In place: a box for it would be an allocation a reply.
    Sse(SseBody),
    /// SSE frames made as they are polled for: a stream another node serves, relayed (N9).
    Relayed(Box<dyn Frames>),
    /// The body of another node's answer, passed on as it comes; it ends where that one
    /// breaks, as the client's connection to that node would have.
    Proxied(hyper::body::Incoming),
}

impl ResponseBody {
    pub(crate) fn empty() -> Self {
        ResponseBody {
            inner: Inner::Full(None),
        }
    }

    pub(crate) fn full(bytes: Bytes) -> Self {
        ResponseBody {
            inner: Inner::Full(Some(bytes)),
        }
    }

    pub(crate) fn relayed(frames: Box<dyn Frames>) -> Self {
        ResponseBody {
            inner: Inner::Relayed(frames),
        }
    }

    pub(crate) fn proxied(body: hyper::body::Incoming) -> Self {
        ResponseBody {
            inner: Inner::Proxied(body),
        }
    }

    pub(crate) fn sse(body: SseBody) -> Self {
        ResponseBody {
            inner: Inner::Sse(body),
        }
    }
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match &mut self.inner {
            Inner::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Inner::Sse(sse) => sse.poll_next(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
            Inner::Relayed(frames) => frames.poll_frame(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
            Inner::Proxied(body) => loop {
                return match std::pin::Pin::new(&mut *body).poll_frame(cx) {
                    Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                        Ok(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
                        // Trailers: nothing a client of this service expects.
                        Err(_) => continue,
                    },
                    Poll::Ready(Some(Err(err))) => {
                        tracing::debug!(error = %err, "a proxied answer broke off");
                        Poll::Ready(None)
                    }
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Pending => Poll::Pending,
                };
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Full(None) => true,
            Inner::Proxied(body) => body.is_end_stream(),
            _ => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Full(None) => SizeHint::with_exact(0),
            Inner::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Inner::Proxied(body) => body.size_hint(),
            Inner::Sse(_) | Inner::Relayed(_) => SizeHint::default(),
        }
    }
}
