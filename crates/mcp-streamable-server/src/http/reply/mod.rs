//! The answers the service builds: empty, JSON, or an SSE stream with the headers proxies need
//! (here); the SSE framing of a stream's messages (`sse`); the body of every response (`body`);
//! an idle SSE body's keep-alive comments (`keep_alive`).

pub(crate) mod body;
pub(crate) mod keep_alive;
pub(crate) mod sse;

use bytes::{Bytes, BytesMut};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};

pub(crate) use crate::http::reply::body::ResponseBody;
use crate::http::reply::sse::SseBody;
use crate::protocol::{MCP_SESSION_ID, X_ACCEL_BUFFERING, codes};

pub(crate) const TEXT_EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

pub(crate) fn empty(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::empty());
    *response.status_mut() = status;
    response
}

/// The responses to a POST's requests as one JSON document: an array for a batch (S4).
pub(crate) fn json(
    responses: impl IntoIterator<Item = Bytes>,
    is_batch: bool,
) -> Response<ResponseBody> {
    let bytes = if is_batch {
        let responses: Vec<Bytes> = responses.into_iter().collect();
        let mut out =
            BytesMut::with_capacity(responses.iter().map(|r| r.len() + 1).sum::<usize>() + 2);
        out.extend_from_slice(b"[");
        for (i, r) in responses.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b",");
            }
            out.extend_from_slice(r);
        }
        out.extend_from_slice(b"]");
        out.freeze()
    } else {
        responses.into_iter().next().unwrap_or_default()
    };
    let mut response = Response::new(ResponseBody::full(bytes));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, APPLICATION_JSON);
    response
}

/// A per-request reply as JSON, with the status its error calls for (M5).
pub(crate) fn json_with_status(response: Bytes) -> Response<ResponseBody> {
    #[derive(serde::Deserialize)]
    struct Answer {
        error: Option<ErrorCode>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorCode {
        code: i64,
    }
    let status = serde_json::from_slice::<Answer>(&response)
        .ok()
        .and_then(|a| a.error)
        .and_then(|e| codes::status_of(e.code))
        .unwrap_or(StatusCode::OK);
    let mut reply = json([response], false);
    *reply.status_mut() = status;
    reply
}

/// An SSE response with the headers proxies need to pass it on unbuffered (S15).
pub(crate) fn sse(body: SseBody) -> Response<ResponseBody> {
    let session_id = body.reader().session().id_header.clone();
    sse_response(ResponseBody::sse(body), session_id)
}

/// An SSE response whose frames something else makes: a stream relayed from the node that
/// holds its session.
pub(crate) fn relayed(
    frames: Box<dyn body::Frames>,
    session_id: Option<HeaderValue>,
) -> Response<ResponseBody> {
    sse_response(ResponseBody::relayed(frames), session_id)
}

fn sse_response(body: ResponseBody, session_id: Option<HeaderValue>) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, TEXT_EVENT_STREAM);
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    headers.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    if let Some(value) = session_id {
        headers.insert(MCP_SESSION_ID, value);
    }
    response
}
