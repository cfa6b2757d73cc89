//! The error object of an error response, and the standard error codes.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::raw_eq;

/// The error codes JSON-RPC 2.0 defines.
///
/// Codes from -32000 to -32099 are left to implementations; MCP transports use some of them.
pub mod code {
    /// Invalid JSON was received (J4).
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object (J4).
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// The `error` member of an error response.
///
/// `data` stays raw JSON (J2): it is neither parsed nor re-encoded on its way through.
///
/// ```
/// use mcp_jsonrpc::{ErrorObject, code};
///
/// let err = ErrorObject::new(code::METHOD_NOT_FOUND, "no method named frobnicate");
/// assert_eq!(err.code, -32601);
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorObject {
    /// The error code; see [`code`] for the standard ones.
    pub code: i64,
    /// A short description of the error, for a person.
    pub message: String,
    /// Additional information, as raw JSON (an explicit `null` is kept as it came).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "raw_some"
    )]
    pub data: Option<Box<RawValue>>,
}

/// Reads a present `data` member as raw JSON, `null` included, so that it round-trips.
fn raw_some<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

impl ErrorObject {
    /// An error object without `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Sets `data`.
    pub fn with_data(mut self, data: Box<RawValue>) -> Self {
        self.data = Some(data);
        self
    }
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && raw_eq(self.data.as_deref(), other.data.as_deref())
    }
}

impl Eq for ErrorObject {}
