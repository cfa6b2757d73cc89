//! The MCP-over-HTTP vocabulary of the server: pure, no I/O, no session. What the server and
//! client share comes from `mcp-streamable-protocol`; what only a server reads or writes
//! (event ids, `Accept`, the checks of `initialize` and of the per-request `_meta`) is here.

pub(crate) mod accept;
mod event_id;
pub(crate) mod initialize;
pub(crate) mod params;
mod request_state;
mod tool_headers;
pub(crate) mod transport;

pub(crate) use event_id::EventId;
pub use mcp_streamable_protocol::ProtocolVersion;
pub use mcp_streamable_protocol::codes;
pub use mcp_streamable_protocol::headers::{
    LAST_EVENT_ID, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID,
};
pub(crate) use mcp_streamable_protocol::headers::{X_ACCEL_BUFFERING, is_valid_session_id};
pub(crate) use mcp_streamable_protocol::{decode_header_value, is_per_request_date, meta};
pub use request_state::{
    DEFAULT_STATE_LIFETIME, MIN_STATE_KEY_BYTES, StateError, StateKeyError, StateSealer,
};
pub use tool_headers::{InvalidTool, ToolHeaders};

/// The dates of `versions`, joined with `, `: what a refusal lists.
pub(crate) fn dates(versions: &[ProtocolVersion]) -> String {
    let dates: Vec<&str> = versions.iter().map(|v| v.as_str()).collect();
    dates.join(", ")
}

/// The request `message` answers, if it is a single response with an id.
pub(crate) fn answered_request(message: &[u8]) -> Option<mcp_jsonrpc::Id> {
    match mcp_jsonrpc::parse(message) {
        Ok(mcp_jsonrpc::Body::Single(mcp_jsonrpc::Message::Response(r))) => r.id().cloned(),
        _ => None,
    }
}

/// An error response to `request`, as the bytes of its message.
pub(crate) fn error_response(
    request: mcp_jsonrpc::Id,
    error: mcp_jsonrpc::ErrorObject,
) -> bytes::Bytes {
    let response = mcp_jsonrpc::Response::error(Some(request), error);
    bytes::Bytes::from(mcp_jsonrpc::Message::Response(response).to_vec())
}

/// A refusal the protocol itself defines: a JSON-RPC error code, a message, maybe `data`.
#[derive(Debug)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Box<mcp_jsonrpc::RawValue>>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn with_data(mut self, data: Option<Box<mcp_jsonrpc::RawValue>>) -> Self {
        self.data = data;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_lists_the_dates_of_a_family() {
        assert_eq!(
            dates(ProtocolVersion::SESSION),
            "2025-03-26, 2025-06-18, 2025-11-25"
        );
    }
}
