//! JSON-RPC 2.0 messages for the Model Context Protocol.
//!
//! This crate is the lowest layer of the MCP Streamable HTTP transport: it knows JSON-RPC and
//! nothing of HTTP. It reads a body into a [`Message`] or a batch of them, deciding the kind of
//! each message from the members present (never by trial and error), and writes messages back
//! as compact JSON. Payloads (`params`, `result`, `error.data`) stay raw JSON
//! ([`RawValue`]): a transport moves them without building a tree or re-encoding them.
//!
//! ```
//! use mcp_jsonrpc::{Body, Id, Message, Response, code, parse};
//! use serde_json::value::to_raw_value;
//!
//! let body = parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! let Body::Single(Message::Request(req)) = body else { panic!("not a request") };
//! assert_eq!(req.method, "ping");
//!
//! let reply = Response::success(req.id, to_raw_value(&serde_json::json!({})).unwrap());
//! assert_eq!(reply.to_vec(), br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
//!
//! // Malformed input maps to the JSON-RPC error to answer with.
//! let err = parse(b"not json").unwrap_err();
//! assert_eq!(err.code(), code::PARSE_ERROR);
//! assert_eq!(err.to_response().id(), None);
//! ```
//!
//! What is accepted, exactly (rows J1-J4 of the project's `SPEC.md`):
//! - A body is JSON text as RFC 8259 has it: UTF-8 throughout, unknown members included, and no
//!   byte order mark (which section 8.1 lets a parser refuse). Anything else is -32700.
//! - `jsonrpc` must be the string `"2.0"`; unknown members are ignored; a member of the message
//!   (or of its error object) given twice is an error, however its name is escaped.
//! - A request has `id` and `method`; a notification has `method` and no `id`; a response has
//!   `id` and exactly one of `result` and `error`, which is an object with an integer `code` and
//!   a string `message`.
//! - Ids are strings or integers that fit an `i64` (not `-0`, which would come back as `0`);
//!   `null` only in an error response. JSON-RPC also allows fractional ids, which MCP forbids.
//! - `params` is an object or an array; an explicit `null` is read as absent, a leniency beyond
//!   JSON-RPC, which says only that it may be omitted.
//! - A string the message is read by (a member name, the method, a string id, the version, the
//!   error message) must be Unicode text: a lone surrogate escape there makes the body JSON that
//!   is not a message (-32600). In payloads and unknown members it is kept or skipped unread.
//! - A body is one message or a non-empty array of messages.
//!
//! [`parse`] checks all of this; deserializing a [`Message`] with serde_json directly does not
//! check the UTF-8 of the members it skips.
#![deny(missing_docs, missing_debug_implementations)]

mod encode;
mod error;
mod error_object;
mod id;
mod message;
mod parse;

pub use error::Error;
pub use error_object::{ErrorObject, code};
pub use id::Id;
pub use message::{INITIALIZE, Message, Notification, Request, Response};
pub use parse::{Body, BodyIter, parse};
pub use serde_json::value::{RawValue, to_raw_value};

/// Compares optional raw payloads by their text.
fn raw_eq(a: Option<&RawValue>, b: Option<&RawValue>) -> bool {
    a.map(RawValue::get) == b.map(RawValue::get)
}
