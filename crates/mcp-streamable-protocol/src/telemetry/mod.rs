//! What the MCP semantic conventions of OpenTelemetry (`docs/gen-ai/mcp.md`) fix for both
//! sides, without depending on OpenTelemetry: the server's and the client's `otel` features
//! record by it.

use std::sync::Arc;

mod params;

pub use params::Params;

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
/// (not quoted, as `Id`'s `Display` quotes a string). Shared, in one allocation, since an
/// attribute value is cloned from a span's attributes into a histogram's.
///
/// ```
/// use mcp_jsonrpc::Id;
/// use mcp_streamable_protocol::telemetry::request_id;
///
/// assert_eq!(&*request_id(&Id::Number(-7)), "-7");
/// assert_eq!(&*request_id(&Id::Number(i64::MIN)), "-9223372036854775808");
/// assert_eq!(&*request_id(&Id::String("call-7".into())), "call-7");
/// ```
pub fn request_id(id: &mcp_jsonrpc::Id) -> Arc<str> {
    match id {
        mcp_jsonrpc::Id::Number(n) => {
            use std::fmt::Write as _;
            let mut digits = Digits::default();
            // 20 bytes hold any i64.
            let _ = write!(digits, "{n}");
            Arc::from(digits.as_str())
        }
        mcp_jsonrpc::Id::String(s) => Arc::from(s.as_str()),
    }
}

/// A number's digits, written on the stack.
#[derive(Default)]
struct Digits {
    bytes: [u8; 20],
    len: usize,
}

impl Digits {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl std::fmt::Write for Digits {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.bytes
            .get_mut(self.len..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
