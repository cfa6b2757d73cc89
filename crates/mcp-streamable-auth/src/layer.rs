//! The tower middleware: serves the metadata, checks the token before the inner service runs.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use http::{Method, Request, Response, header};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::guard::Guard;

/// A tower [`Layer`] that wraps a service in [`RequireBearer`]; [`Guard::layer`] makes one.
#[derive(Debug, Clone)]
pub struct RequireBearerLayer {
    guard: Guard,
}

impl RequireBearerLayer {
    /// A layer that guards with `guard`.
    pub fn new(guard: Guard) -> RequireBearerLayer {
        RequireBearerLayer { guard }
    }
}

impl<S> Layer<S> for RequireBearerLayer {
    type Service = RequireBearer<S>;

    fn layer(&self, inner: S) -> RequireBearer<S> {
        RequireBearer::new(inner, self.guard.clone())
    }
}

/// A service that lets through to the inner one only requests with a good bearer token.
///
/// For each request, in order:
/// 1. a request for one of the [`Guard::metadata_paths`] gets the metadata document
///    ([`Guard::metadata_response`]); the inner service never sees it;
/// 2. a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) goes to the inner service
///    unchecked, since browsers never send credentials with one;
/// 3. anything else is checked with [`Guard::check_request`]: a refusal is answered here
///    ([`Refusal::to_response`](crate::Refusal::to_response)), a success puts the
///    [`Principal`](crate::Principal) into the request's extensions and calls the inner service.
///
/// ```
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use std::convert::Infallible;
/// use bytes::Bytes;
/// use http::{Request, Response};
/// use http_body_util::{BodyExt, Full};
/// use mcp_streamable_auth::{Guard, Principal, TokenError, TokenErrorKind, TokenVerifier, VerifyFuture};
/// use tower::{ServiceBuilder, ServiceExt, service_fn};
///
/// struct Fixed;
/// impl TokenVerifier for Fixed {
///     fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
///         Box::pin(async move {
///             match token {
///                 "secret" => Ok(Principal::new("alice")),
///                 _ => Err(TokenError::new(TokenErrorKind::Invalid)),
///             }
///         })
///     }
/// }
///
/// let guard = Guard::builder("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .build(Fixed)?;
/// let mcp = service_fn(|request: Request<Full<Bytes>>| async move {
///     let who = request.extensions().get::<Principal>().map(|p| p.subject.clone());
///     Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(who.unwrap_or_default()))))
/// });
/// let service = ServiceBuilder::new().layer(guard.layer()).service(mcp);
///
/// let request = Request::post("/mcp")
///     .header("authorization", "Bearer secret")
///     .body(Full::new(Bytes::new()))?;
/// let response = service.clone().oneshot(request).await?;
/// assert_eq!(response.into_body().collect().await?.to_bytes(), "alice");
///
/// let request = Request::post("/mcp").body(Full::new(Bytes::new()))?;
/// assert_eq!(service.oneshot(request).await?.status(), 401);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RequireBearer<S> {
    inner: S,
    guard: Guard,
}

impl<S> RequireBearer<S> {
    /// Guards `inner` with `guard`.
    pub fn new(inner: S, guard: Guard) -> RequireBearer<S> {
        RequireBearer { inner, guard }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

/// The future of [`RequireBearer`]: boxed, since it awaits the verifier's (boxed) future before
/// the inner service's.
pub type ResponseFuture<B, E> =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody<B>>, E>> + Send>>;

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for RequireBearer<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Self::Future {
        if let Some(response) = self
            .guard
            .metadata_response(request.method(), request.uri().path())
        {
            return Box::pin(std::future::ready(Ok(response.map(ResponseBody::own))));
        }
        // The clone waits for readiness in the next `poll_ready`; the one made ready is used
        // now (tower's guidance for services that move into a future).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        if is_preflight(&request) {
            let future = inner.call(request);
            return Box::pin(async move { Ok(future.await?.map(ResponseBody::inner)) });
        }
        let guard = self.guard.clone();
        Box::pin(async move {
            let (method, uri, headers) = (request.method(), request.uri(), request.headers());
            match guard.check_request(method, uri, headers).await {
                Ok(principal) => {
                    request.extensions_mut().insert(principal);
                    Ok(inner.call(request).await?.map(ResponseBody::inner))
                }
                Err(refusal) => Ok(refusal.to_response().map(ResponseBody::own)),
            }
        })
    }
}

fn is_preflight<B>(request: &Request<B>) -> bool {
    request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

pin_project! {
    /// The body of [`RequireBearer`]'s responses: the inner service's, or the guard's own
    /// (metadata, refusals).
    #[derive(Debug)]
    pub struct ResponseBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    #[derive(Debug)]
    enum Kind<B> {
        Inner { #[pin] body: B },
        Own { body: Full<Bytes> },
    }
}

impl<B> ResponseBody<B> {
    /// Wraps the inner service's body.
    pub fn inner(body: B) -> ResponseBody<B> {
        ResponseBody {
            kind: Kind::Inner { body },
        }
    }

    /// Wraps a body of the guard's own.
    pub fn own(body: Full<Bytes>) -> ResponseBody<B> {
        ResponseBody {
            kind: Kind::Own { body },
        }
    }
}

impl<B: Body<Data = Bytes>> Body for ResponseBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project().kind.project() {
            KindProj::Inner { body } => body.poll_frame(cx),
            KindProj::Own { body } => Pin::new(body)
                .poll_frame(cx)
                .map(|frame| frame.map(|frame| frame.map_err(|never| match never {}))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Own { body } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Own { body } => body.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests;
