//! The error object of an error response, and the standard error codes.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
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
///
/// Reading one takes exactly what JSON-RPC 2.0 section 5.1 describes: an object (not an array,
/// which serde would otherwise read member by member) with an integer `code` and a string
/// `message`, each given once; other members are ignored.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ErrorObject {
    /// The error code; see [`code`] for the standard ones.
    pub code: i64,
    /// A short description of the error, for a person.
    pub message: String,
    /// Additional information, as raw JSON (an explicit `null` is kept as it came).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl<'de> Deserialize<'de> for ErrorObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ErrorObjectVisitor)
    }
}

/// A member of an error object.
enum Field {
    Code,
    Message,
    Data,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
                Ok(match name {
                    "code" => Field::Code,
                    "message" => Field::Message,
                    "data" => Field::Data,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(V)
    }
}

struct ErrorObjectVisitor;

impl<'de> Visitor<'de> for ErrorObjectVisitor {
    type Value = ErrorObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an error object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ErrorObject, A::Error> {
        let mut code = None;
        let mut message = None;
        // A present `data` is kept as raw JSON, `null` included, so that it round-trips.
        let mut data = None;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Code if code.is_some() => return Err(de::Error::duplicate_field("code")),
                Field::Code => code = Some(map.next_value::<i64>()?),
                Field::Message if message.is_some() => {
                    return Err(de::Error::duplicate_field("message"));
                }
                Field::Message => message = Some(map.next_value::<String>()?),
                Field::Data if data.is_some() => return Err(de::Error::duplicate_field("data")),
                Field::Data => data = Some(map.next_value::<Box<RawValue>>()?),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(ErrorObject {
            code: code.ok_or_else(|| de::Error::missing_field("code"))?,
            message: message.ok_or_else(|| de::Error::missing_field("message"))?,
            data,
        })
    }
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
