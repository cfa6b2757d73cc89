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
//! - `jsonrpc` must be the string `"2.0"`; unknown members are ignored; a member given twice is
//!   an error.
//! - A request has `id` and `method`; a notification has `method` and no `id`; a response has
//!   `id` and exactly one of `result` and `error`.
//! - Ids are strings or integers that fit an `i64`; `null` only in an error response.
//! - `params` is an object or an array; an explicit `null` is read as absent.
//! - A body is one message or a non-empty array of messages.
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
