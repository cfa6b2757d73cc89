//! Error answers: every one carries a JSON-RPC error body (S21), and the status of each kind
//! of refusal is decided here, in one place.

use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};
use mcp_jsonrpc::{ErrorObject, Id, RawValue, code};

use crate::core::Error;
use crate::http::reply::ResponseBody;
use crate::protocol::{RpcError, codes};

/// Why a request is refused. The status of each is in [`Reject::status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Kind {
    /// S1, S20: the method is not served.
    MethodNotAllowed,
    /// S2: `Accept` does not admit what the reply needs.
    NotAcceptable,
    /// S3: `Content-Type` is not JSON.
    UnsupportedMediaType,
    /// S3: the body is over the limit.
    PayloadTooLarge,
    /// S24: the body did not arrive in time (a read timeout of the server around the service).
    RequestTimeout,
    /// S17: `Origin` or `Host` is not allowed.
    Forbidden,
    /// S7, S16: no session with that id.
    SessionNotFound,
    /// M5: a per-request (2026-07-28) method the server does not serve.
    MethodNotFound,
    /// S18, S23: no room for a session, or shutting down.
    Unavailable,
    /// S26: over a rate limit; try again after this long.
    TooManyRequests(std::time::Duration),
    /// Everything else the client must fix: malformed bodies, bad or missing headers...
    BadRequest,
    /// Our own fault.
    Internal,
}

#[cfg(feature = "otel")]
impl Kind {
    /// The reason of a refusal, as its telemetry names it (`mcp.refusal.reason`).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Kind::MethodNotAllowed => "method_not_allowed",
            Kind::NotAcceptable => "not_acceptable",
            Kind::UnsupportedMediaType => "unsupported_media_type",
            Kind::PayloadTooLarge => "payload_too_large",
            Kind::RequestTimeout => "request_timeout",
            Kind::Forbidden => "forbidden",
            Kind::SessionNotFound => "session_not_found",
            Kind::MethodNotFound => "method_not_found",
            Kind::Unavailable => "unavailable",
            Kind::TooManyRequests(_) => "too_many_requests",
            Kind::BadRequest => "bad_request",
            Kind::Internal => "internal",
        }
    }
}

/// A refusal: what went wrong, for the client and for the log.
#[derive(Debug, Clone)]
pub(crate) struct Reject {
    pub(crate) kind: Kind,
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) id: Option<Id>,
    pub(crate) data: Option<Box<RawValue>>,
}

impl Reject {
    pub(crate) fn new(kind: Kind, message: impl Into<String>) -> Self {
        let code = match kind {
            Kind::SessionNotFound => codes::SESSION_NOT_FOUND,
            Kind::Internal => code::INTERNAL_ERROR,
            _ => codes::TRANSPORT_ERROR,
        };
        Reject::with_code(kind, code, message)
    }

    fn with_code(kind: Kind, code: i64, message: impl Into<String>) -> Self {
        Reject {
            kind,
            code,
            message: message.into(),
            id: None,
            data: None,
        }
    }

    /// A refusal with a JSON-RPC `code` of the 2026-07-28 family, its status decided by
    /// [`codes::status_of`] (M5).
    pub(crate) fn rpc(code: i64, message: impl Into<String>) -> Self {
        let kind = match codes::status_of(code) {
            Some(StatusCode::NOT_FOUND) => Kind::MethodNotFound,
            _ => Kind::BadRequest,
        };
        Reject::with_code(kind, code, message)
    }

    /// S26: over a rate limit, for `wait` more.
    pub(crate) fn too_many_requests(wait: std::time::Duration) -> Self {
        let secs = retry_after_secs(wait);
        Reject::new(
            Kind::TooManyRequests(wait),
            format!(
                "rate limit: this client sends faster than the server allows; retry after {secs} s"
            ),
        )
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Reject::new(Kind::BadRequest, message)
    }

    /// S7, S16: no session with the id given.
    pub(crate) fn session_not_found() -> Self {
        Reject::new(
            Kind::SessionNotFound,
            "session not found: it ended or never existed; start a new one with initialize",
        )
    }

    /// The refusal of a body that is one request carries that request's id (S21); others, and
    /// refusals made before the body is read, carry `null`.
    pub(crate) fn with_id(mut self, id: Option<&Id>) -> Self {
        if self.id.is_none() {
            self.id = id.cloned();
        }
        self
    }

    /// A malformed body: -32700 or -32600 (J4).
    pub(crate) fn from_parse(err: &mcp_jsonrpc::Error) -> Self {
        let obj = err.to_error_object();
        Reject::with_code(Kind::BadRequest, obj.code, obj.message)
    }

    /// A bad request answered with a JSON-RPC `code` of its own (-32600, -32602).
    pub(crate) fn invalid(code: i64, message: impl Into<String>) -> Self {
        Reject::with_code(Kind::BadRequest, code, message)
    }

    /// The HTTP status of this refusal: the one place statuses are decided.
    pub(crate) fn status(&self) -> StatusCode {
        match self.kind {
            Kind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Kind::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Kind::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Kind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Kind::Forbidden => StatusCode::FORBIDDEN,
            Kind::SessionNotFound | Kind::MethodNotFound => StatusCode::NOT_FOUND,
            Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Kind::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            Kind::BadRequest => StatusCode::BAD_REQUEST,
            Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The answer to a refusal of the session core: the one place its errors get statuses.
    pub(crate) fn from_core(err: Error) -> Self {
        match err {
            Error::SessionNotFound => Reject::session_not_found(),
            Error::ShuttingDown(what) => Reject::new(
                Kind::Unavailable,
                format!("the server is shutting down: {what}"),
            ),
            Error::TooManySessions => Reject::new(
                Kind::Unavailable,
                "too many sessions, none of them idle; try again later",
            ),
            Error::TooManySessionsForClient(cap) => Reject::new(
                Kind::Unavailable,
                format!(
                    "this client holds {cap} sessions, its cap, none of them idle; end one \
                     (DELETE) or try again later"
                ),
            ),
            Error::InboundFull(held) => Reject::new(
                Kind::Unavailable,
                format!(
                    "the server's applications have {held} bytes of messages still to read, \
                     past its budget; try again later"
                ),
            ),
            Error::VersionMismatch { header, negotiated } => Reject::bad_request(format!(
                "MCP-Protocol-Version {header} is not this session's: it negotiated {negotiated}"
            )),
            Error::BatchNotAllowed(version) => Reject::bad_request(format!(
                "batches are not allowed in protocol version {version}; send one message per request"
            )),
            Error::DuplicateRequestId(id) => Reject::bad_request(format!(
                "request id {id} is already in flight in this session; ids must be unique among requests in flight"
            )),
            Error::NoEventStore => Reject::bad_request(
                "this server keeps no events, so streams cannot be resumed: Last-Event-ID is not accepted",
            ),
            Error::UnknownEvent(id) => Reject::bad_request(format!(
                "unknown Last-Event-ID \"{id}\": no such event in this session"
            )),
            Error::Purged(id) => Reject::bad_request(format!(
                "Last-Event-ID \"{id}\" is too old: later events were purged from the event store"
            )),
            Error::StoreFailed => Reject::new(Kind::Internal, "the server's store failed"),
            Error::SharedStoreDown(why) => Reject::new(
                Kind::Unavailable,
                format!("the store the server's nodes share is unavailable ({why}); retry later"),
            ),
            // Both send a request elsewhere before they come to a client; one that does found
            // no node to serve it in time.
            Error::NotHolder | Error::Fenced => Reject::new(
                Kind::Unavailable,
                "no node of the server could prove it holds this session in time; retry later",
            ),
        }
    }

    pub(crate) fn into_response(self, allow: &'static str) -> Response<ResponseBody> {
        let status = self.status();
        let mut error = ErrorObject::new(self.code, self.message);
        if let Some(data) = self.data {
            error = error.with_data(data);
        }
        let body = mcp_jsonrpc::Response::error(self.id, error);
        let mut response = Response::new(ResponseBody::full(Bytes::from(body.to_vec())));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        match self.kind {
            Kind::MethodNotAllowed => {
                headers.insert(ALLOW, HeaderValue::from_static(allow));
            }
            Kind::Unavailable => {
                headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
            }
            Kind::TooManyRequests(wait) => {
                headers.insert(RETRY_AFTER, HeaderValue::from(retry_after_secs(wait)));
            }
            _ => {}
        }
        response
    }
}

/// `Retry-After` counts whole seconds: a wait rounds up, and is at least one.
pub(crate) fn retry_after_secs(wait: std::time::Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

impl From<Error> for Reject {
    fn from(err: Error) -> Self {
        Reject::from_core(err)
    }
}

impl From<RpcError> for Reject {
    fn from(err: RpcError) -> Self {
        let mut reject = Reject::rpc(err.code, err.message);
        reject.data = err.data;
        reject
    }
}
