//! Authorization at the edge (feature `auth`, A1-A3, A5, A8): the metadata document at its
//! paths, then the credentials of every other request (a bearer token, or a DPoP-bound token and
//! its proof), before anything else is looked at.

use bytes::Bytes;
use http::{Method, Request, Response, header};
use http_body_util::{BodyExt, Full};
use mcp_streamable_auth::Guard;

use crate::http::reply::ResponseBody;

/// Lets `request` through with its [`Principal`](mcp_streamable_auth::Principal) in its
/// extensions, or answers it: the metadata document for a request to one of its paths, the
/// guard's refusal for a request without a good token. A CORS preflight passes unchecked, as
/// browsers never send credentials with one (the rule of the auth crate's `RequireBearer`).
pub(crate) async fn admit<B>(
    guard: &Guard,
    mut request: Request<B>,
) -> Result<Request<B>, Response<ResponseBody>> {
    if let Some(response) = guard.metadata_response(request.method(), request.uri().path()) {
        return Err(own(response).await);
    }
    if is_preflight(&request) {
        return Ok(request);
    }
    // With the request's method and URL, which a DPoP proof names (A8).
    let checked = guard.check_request(request.method(), request.uri(), request.headers());
    match checked.await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            Ok(request)
        }
        Err(refusal) => Err(own(refusal.to_response()).await),
    }
}

/// The guard's answer with the service's body type. The body is all there already, so
/// collecting it does not wait.
async fn own(response: Response<Full<Bytes>>) -> Response<ResponseBody> {
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let body = if bytes.is_empty() {
        ResponseBody::empty()
    } else {
        ResponseBody::full(bytes)
    };
    Response::from_parts(parts, body)
}

fn is_preflight<B>(request: &Request<B>) -> bool {
    request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}
