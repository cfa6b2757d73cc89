//! The error of parsing a body.

use std::fmt;

use crate::{ErrorObject, Response, code};

/// Why a body could not be parsed into messages (J4).
///
/// It maps to a JSON-RPC error: [`code`](Error::code) is -32700 for malformed JSON and -32600
/// for valid JSON that is not a message; [`to_response`](Error::to_response) builds the answer,
/// with `id: null`.
///
/// ```
/// use mcp_jsonrpc::{code, parse};
///
/// assert_eq!(parse(b"{").unwrap_err().code(), code::PARSE_ERROR);
/// assert_eq!(parse(b"[]").unwrap_err().code(), code::INVALID_REQUEST);
/// ```
#[derive(Debug)]
pub struct Error {
    kind: Kind,
    index: Option<usize>,
    source: Option<Source>,
}

/// What the error came from: serde_json, or the check that the body is UTF-8.
#[derive(Debug)]
enum Source {
    Json(serde_json::Error),
    Utf8(std::str::Utf8Error),
}

impl Source {
    fn as_error(&self) -> &(dyn std::error::Error + 'static) {
        match self {
            Source::Json(error) => error,
            Source::Utf8(error) => error,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The bytes are not JSON.
    Syntax,
    /// JSON, but not a JSON-RPC message.
    Invalid,
    /// An array with no element.
    EmptyBatch,
}

impl Error {
    /// The bytes are not JSON text (RFC 8259), as serde_json found.
    pub(crate) fn syntax(err: serde_json::Error) -> Self {
        Error {
            kind: Kind::Syntax,
            index: None,
            source: Some(Source::Json(err)),
        }
    }

    /// The bytes are not UTF-8, so not JSON text exchanged between systems (RFC 8259 section
    /// 8.1).
    pub(crate) fn utf8(err: std::str::Utf8Error) -> Self {
        Error {
            kind: Kind::Syntax,
            index: None,
            source: Some(Source::Utf8(err)),
        }
    }

    /// JSON text, but the body (or its element `index`) is not a message.
    pub(crate) fn invalid(err: serde_json::Error, index: Option<usize>) -> Self {
        Error {
            kind: Kind::Invalid,
            index,
            source: Some(Source::Json(err)),
        }
    }

    pub(crate) fn empty_batch() -> Self {
        Error {
            kind: Kind::EmptyBatch,
            index: None,
            source: None,
        }
    }

    /// Whether the bytes were not valid JSON (as opposed to JSON that is not a message).
    pub fn is_syntax(&self) -> bool {
        self.kind == Kind::Syntax
    }

    /// The JSON-RPC error code for this error: [`code::PARSE_ERROR`] or
    /// [`code::INVALID_REQUEST`].
    pub fn code(&self) -> i64 {
        match self.kind {
            Kind::Syntax => code::PARSE_ERROR,
            Kind::Invalid | Kind::EmptyBatch => code::INVALID_REQUEST,
        }
    }

    /// The position in the batch of the element that was not a message, if the body was a
    /// batch.
    pub fn batch_index(&self) -> Option<usize> {
        self.index
    }

    /// The error object to answer with. Its message says what was wrong and where, detail
    /// included, since the peer that sent the body is the one who must fix it.
    pub fn to_error_object(&self) -> ErrorObject {
        let message = match &self.source {
            Some(source) => format!("{self}: {}", source.as_error()),
            None => self.to_string(),
        };
        ErrorObject::new(self.code(), message)
    }

    /// The error response to answer with, with `id: null` (J4).
    pub fn to_response(&self) -> Response {
        Response::error(None, self.to_error_object())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.index) {
            (Kind::Syntax, _) => f.write_str("parse error: invalid JSON"),
            (Kind::EmptyBatch, _) => f.write_str("invalid request: empty batch"),
            (Kind::Invalid, None) => f.write_str("invalid request: not a JSON-RPC 2.0 message"),
            (Kind::Invalid, Some(i)) => write!(
                f,
                "invalid request: batch element {i} is not a JSON-RPC 2.0 message"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(Source::as_error)
    }
}
