//! The header names of the transport.

use http::HeaderName;

/// The session id a server assigns in its answer to `initialize`, sent back on every request
/// of the session.
pub const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The protocol version of the request: the negotiated one in a session, the request's own in
/// the per-request family.
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The SSE event id a GET resumes a stream after.
pub const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// 2026-07-28: the body's `method`, mirrored on every POST.
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// 2026-07-28: the body's `params.name` (`tools/call`, `prompts/get`) or `params.uri`
/// (`resources/read`), mirrored.
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// A DPoP proof of possession of the key a token is bound to (RFC 9449, section 4.1).
pub const DPOP: HeaderName = HeaderName::from_static("dpop");
/// The nonce a server hands a client for its next DPoP proofs (RFC 9449, section 8).
pub const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");
/// Asks nginx and proxies like it not to buffer a response: what SSE streams need.
pub const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// Whether `id` is a well-formed session id: 1 to 128 visible ASCII characters.
pub fn is_valid_session_id(id: &[u8]) -> bool {
    !id.is_empty() && id.len() <= 128 && id.iter().all(|b| (0x21..=0x7e).contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_visible_ascii() {
        assert!(is_valid_session_id(b"abc-123_XYZ"));
        assert!(!is_valid_session_id(b""));
        assert!(!is_valid_session_id(b"has space"));
        assert!(!is_valid_session_id(b"caf\xc3\xa9"));
        assert!(!is_valid_session_id("a".repeat(129).as_bytes()));
    }
}
