//! Integration tests of `mcp-transport`: the contract of the crate docs, for each transport.

mod boxed;
mod memory;
mod stdio;

use mcp_jsonrpc::{Message, Notification, Request};

fn note(method: &str) -> Message {
    Notification::new(method, None).into()
}

fn request(id: i64) -> Message {
    Request::new(id, "ping", None).into()
}
