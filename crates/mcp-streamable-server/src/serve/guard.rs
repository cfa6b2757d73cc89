//! The service one connection is served with: the MCP service behind the per-connection
//! checks (request budget, path), with each request's body under its read deadline and each
//! response counted in flight until its body ends.

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
use crate::http::response_body::ResponseBody;
use crate::http::service::StreamableHttpService;
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
        if !self.watch.admit() {
            tracing::warn!(
                rate = self.options.max_request_rate,
                "a peer starts requests faster than its budget; closing its connection"
            );
            return refusal(StatusCode::TOO_MANY_REQUESTS, "too many requests\n");
        }
        if !self.serves(request.uri().path()) {
            return refusal(StatusCode::NOT_FOUND, "not found\n");
        }
        let inflight = self.watch.begin();
        let deadline = Instant::now() + self.options.body_read_timeout;
        let request = request.map(|body| TimedBody::new(body, deadline));
        let response = self.service.handle(request).await;
        response.map(|body| Tracked {
            body,
            _inflight: Some(inflight),
        })
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
fn refusal(status: StatusCode, text: &'static str) -> Response<Tracked> {
    let mut response = Response::new(Tracked {
        body: ResponseBody::full(Bytes::from_static(text.as_bytes())),
        _inflight: None,
    });
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A response body that keeps its request counted in flight until it ends or is dropped.
#[derive(Debug)]
pub(crate) struct Tracked {
    body: ResponseBody,
    _inflight: Option<Inflight>,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
