//! The JSON-RPC error codes the transport uses, and the HTTP status each calls for.
//!
//! Codes in the range JSON-RPC leaves to implementations; they agree with the official
//! TypeScript SDK, so clients that look at codes see the same ones.

use http::StatusCode;
use mcp_jsonrpc::code::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};

/// A refusal by the transport: bad headers, wrong method, missing session id...
pub const TRANSPORT_ERROR: i64 = -32000;
/// The session id is unknown or its session ended (HTTP 404).
pub const SESSION_NOT_FOUND: i64 = -32001;
/// 2026-07-28: the request's headers disagree with its body, or a required one is missing or
/// malformed (HTTP 400).
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability its `_meta` does not declare (HTTP 400).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the requested protocol version is not served; `data` lists the supported ones
/// (HTTP 400).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The HTTP status of a per-request (2026-07-28) reply whose response is an error with `code`:
/// 404 for method not found, 400 for the errors of a malformed or unsupported request, `None`
/// (200) for every other error, which the request reached the application to earn.
///
/// ```
/// use mcp_streamable_protocol::codes::{status_of, HEADER_MISMATCH};
///
/// assert_eq!(status_of(HEADER_MISMATCH), Some(http::StatusCode::BAD_REQUEST));
/// assert_eq!(status_of(-32603), None);
/// ```
pub fn status_of(code: i64) -> Option<StatusCode> {
    match code {
        METHOD_NOT_FOUND => Some(StatusCode::NOT_FOUND),
        PARSE_ERROR
        | INVALID_REQUEST
        | INVALID_PARAMS
        | HEADER_MISMATCH
        | MISSING_REQUIRED_CLIENT_CAPABILITY
        | UNSUPPORTED_PROTOCOL_VERSION => Some(StatusCode::BAD_REQUEST),
        _ => None,
    }
}
