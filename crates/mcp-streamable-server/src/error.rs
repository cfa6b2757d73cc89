//! Error answers: every one carries a JSON-RPC error body (S21), and the status of each kind
//! of refusal is decided here, in one place.

use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};
use mcp_jsonrpc::{ErrorObject, Id, RawValue, code};

use crate::body::ResponseBody;

/// JSON-RPC error codes the transport uses for its own refusals, in the range JSON-RPC leaves
/// to implementations. They agree with the official TypeScript SDK, so clients that look at
/// codes see the same ones.
pub mod codes {
    /// A refusal by the transport: bad headers, wrong method, missing session id...
    pub const TRANSPORT_ERROR: i64 = -32000;
    /// The session id is unknown or its session ended (HTTP 404).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// 2026-07-28: the request's headers disagree with its body, or a required one is missing
    /// or malformed (HTTP 400, M4).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability its `_meta` does not declare (HTTP
    /// 400). Applications answer it; the transport only maps its status (M5).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the requested protocol version is not served; `data` lists the supported
    /// ones (HTTP 400, M3).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

    /// The HTTP status of a per-request (2026-07-28) reply whose response is an error with
    /// `code` (M5): 404 for method not found, 400 for the errors of a malformed or unsupported
    /// request, `None` (200) for every other error, which the request reached the application
    /// to earn.
    pub fn status_of(code: i64) -> Option<http::StatusCode> {
        use mcp_jsonrpc::code::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
        match code {
            METHOD_NOT_FOUND => Some(http::StatusCode::NOT_FOUND),
            PARSE_ERROR
            | INVALID_REQUEST
            | INVALID_PARAMS
            | HEADER_MISMATCH
            | MISSING_REQUIRED_CLIENT_CAPABILITY
            | UNSUPPORTED_PROTOCOL_VERSION => Some(http::StatusCode::BAD_REQUEST),
            _ => None,
        }
    }
}

/// Why a request is refused. The status of each is in [`Reject::status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// S1, S20: the method is not served.
    MethodNotAllowed,
    /// S2: `Accept` does not admit what the reply needs.
    NotAcceptable,
    /// S3: `Content-Type` is not JSON.
    UnsupportedMediaType,
    /// S3: the body is over the limit.
    PayloadTooLarge,
    /// S17: `Origin` or `Host` is not allowed.
    Forbidden,
    /// S7, S16: no session with that id.
    SessionNotFound,
    /// M5: a per-request (2026-07-28) method the server does not serve.
    MethodNotFound,
    /// S18, S23: no room for a session, or shutting down.
    Unavailable,
    /// Everything else the client must fix: malformed bodies, bad or missing headers...
    BadRequest,
    /// Our own fault.
    Internal,
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

    /// Sets the error's `data`.
    pub(crate) fn with_data(mut self, data: Box<RawValue>) -> Self {
        self.data = Some(data);
        self
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

    /// The HTTP status of this refusal: the one place statuses are decided.
    pub(crate) fn status(&self) -> StatusCode {
        match self.kind {
            Kind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Kind::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Kind::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Kind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::Forbidden => StatusCode::FORBIDDEN,
            Kind::SessionNotFound | Kind::MethodNotFound => StatusCode::NOT_FOUND,
            Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Kind::BadRequest => StatusCode::BAD_REQUEST,
            Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
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
            _ => {}
        }
        response
    }
}
