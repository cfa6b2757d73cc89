//! The service one connection is served with: the MCP service behind the path check, with
//! each request's body under its read deadline and each request counted in flight until its
//! response's body ends (or is abandoned, which counts against the connection's budget).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::Instant;

use crate::core::owner::PeerAddr;
use crate::http::reply::ResponseBody;
use crate::http::service::StreamableHttpService;
use crate::serve::health;
use crate::serve::options::Options;
use crate::serve::timed_body::TimedBody;
use crate::serve::watch::{Inflight, Watch};

/// The service of one connection.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// The client's address, put in each request's extensions (the per-client session cap).
    pub(crate) peer: PeerAddr,
    pub(crate) service: StreamableHttpService,
    pub(crate) options: Arc<Options>,
    pub(crate) watch: Arc<Watch>,
}

type GuardFuture = Pin<Box<dyn Future<Output = Result<Response<Tracked>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Guard {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = GuardFuture;

    fn call(&self, request: Request<Incoming>) -> GuardFuture {
        let this = self.clone();
        Box::pin(async move { Ok(this.serve(request).await) })
    }
}

impl Guard {
    async fn serve(self, mut request: Request<Incoming>) -> Response<Tracked> {
        request.extensions_mut().insert(self.peer);
        // Dropped with this future if the peer resets the stream before the answer.
        let inflight = self.watch.begin();
        if let Some((status, text)) = health::probe(&self.options, &self.service, &request) {
            return refusal(status, &text, inflight);
        }
        if !self.serves(request.uri().path()) {
            return refusal(StatusCode::NOT_FOUND, "not found\n", inflight);
        }
        let deadline = Instant::now() + self.options.body_read_timeout;
        let abandon = inflight.abandon_handle();
        let request = request.map(|body| TimedBody::new(body, deadline, abandon));
        let response = self.service.handle(request).await;
        response.map(|body| Tracked::new(body, inflight))
    }

    /// Whether `path` is the MCP endpoint, or one of the guard's metadata paths.
    fn serves(&self, path: &str) -> bool {
        let Some(endpoint) = &self.options.path else {
            return true;
        };
        #[cfg(feature = "auth")]
        if let Some(guard) = self.service.config().guard()
            && guard.metadata_paths().iter().any(|served| served == path)
        {
            return true;
        }
        path == endpoint
    }
}

/// A short plain-text answer of the server itself, not of the service.
fn refusal(status: StatusCode, text: &str, inflight: Inflight) -> Response<Tracked> {
    let body = ResponseBody::full(Bytes::copy_from_slice(text.as_bytes()));
    let mut response = Response::new(Tracked::new(body, inflight));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A response body that keeps its request counted in flight until it ends or is dropped, and
/// tells which.
#[derive(Debug)]
pub(crate) struct Tracked {
    body: ResponseBody,
    inflight: Inflight,
}

impl Tracked {
    fn new(body: ResponseBody, mut inflight: Inflight) -> Self {
        // An empty body is over before it starts: hyper may never poll it.
        if body.is_end_stream() {
            inflight.finish();
        }
        Tracked { body, inflight }
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        // The last frame, or none: hyper stops polling a body that says it has ended.
        let ended = match &frame {
            Poll::Ready(None) => true,
            Poll::Ready(Some(_)) => self.body.is_end_stream(),
            Poll::Pending => false,
        };
        if ended {
            self.inflight.finish();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
