//! What the MCP semantic conventions of OpenTelemetry (`docs/gen-ai/mcp.md`) fix for both
//! sides, without depending on OpenTelemetry: the server's and the client's `otel` features
//! record by it.

/// The bucket boundaries, in seconds, of the convention's four duration histograms
/// (`mcp.server.operation.duration`, `mcp.client.operation.duration` and the two session
/// durations): from 10 ms to 5 minutes, for calls from a ping to a long tool.
///
/// ```
/// assert_eq!(mcp_streamable_protocol::telemetry::DURATION_BUCKETS.len(), 14);
/// ```
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// `jsonrpc.request.id`: the request's id as text, a number's digits or a string's characters
/// (not quoted, as `Id`'s `Display` quotes a string).
///
/// ```
/// use mcp_jsonrpc::Id;
/// use mcp_streamable_protocol::telemetry::request_id;
///
/// assert_eq!(request_id(&Id::Number(7)), "7");
/// assert_eq!(request_id(&Id::String("call-7".into())), "call-7");
/// ```
pub fn request_id(id: &mcp_jsonrpc::Id) -> String {
    match id {
        mcp_jsonrpc::Id::Number(n) => n.to_string(),
        mcp_jsonrpc::Id::String(s) => s.clone(),
    }
}
