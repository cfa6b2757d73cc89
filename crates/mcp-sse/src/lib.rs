//! Server-Sent Events for the MCP Streamable HTTP transport: an encoder and an incremental,
//! bounded scanner.
//!
//! This crate is the SSE layer and nothing else. It turns [`Event`]s into `text/event-stream`
//! bytes and bytes back into events; it knows nothing of HTTP, JSON-RPC or sockets. A server
//! encodes each message as an event into its response body ([`EventRef::encode`] does not
//! allocate) and writes comments as keep-alives ([`encode_comment`]). A client feeds the chunks
//! of a response body to a [`Scanner`], which does no I/O, or wraps the body in an
//! [`EventStream`]; either tells it the id to resume from and the reconnection time the server
//! asked for.
//!
//! ```
//! use bytes::BytesMut;
//! use mcp_sse::{Event, EventRef, Scanner, encode_comment};
//!
//! let mut body = BytesMut::new();
//! EventRef::new(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).with_id("0_1").encode(&mut body)?;
//! encode_comment("keep-alive", &mut body);
//! Event::new("two\nlines").with_name("note").encode(&mut body)?;
//!
//! let mut scanner = Scanner::new();
//! let mut events = Vec::new();
//! // Any chunking gives the same events.
//! for chunk in body.chunks(5) {
//!     scanner.feed(chunk);
//!     while let Some(event) = scanner.next_event()? {
//!         events.push(event);
//!     }
//! }
//! scanner.finish();
//!
//! assert_eq!(events[0], Event::new(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).with_id("0_1"));
//! assert_eq!(events[1], Event::new("two\nlines").with_name("note"));
//! assert_eq!(scanner.last_event_id(), "0_1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The rules followed, from the WHATWG HTML standard (rows E1-E5 of the project's `SPEC.md`):
//! - E1: lines end in CRLF, LF or CR, and a CRLF split across two chunks is one line end; a
//!   leading byte order mark is dropped.
//! - E2: `field: value` drops one leading space; a line without a colon is a field with an empty
//!   value; a line starting with `:` is a comment.
//! - E3: `data` lines join with LF; a blank line dispatches the event, unless it had no data, but
//!   its `id` still sets the last event id; an `id` holding NUL is ignored; `retry` takes digits
//!   only.
//! - E4: an unfinished event at the end of the stream is dropped; the scanner never searches the
//!   same bytes twice and bounds the bytes buffered for one event ([`DEFAULT_MAX_EVENT_SIZE`]).
//! - E5: the encoder splits multi-line data into several `data` lines, always writes at least one
//!   (an event without data is not dispatched), and refuses ids or names holding CR or LF, and
//!   ids holding NUL.

#![deny(missing_docs, missing_debug_implementations)]

mod encode;
mod error;
mod event;
mod scan;
mod stream;

pub use encode::encode_comment;
pub use error::{EncodeError, ScanError, StreamError};
pub use event::{Event, EventRef};
pub use scan::{DEFAULT_MAX_EVENT_SIZE, Scanner};
pub use stream::EventStream;

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
