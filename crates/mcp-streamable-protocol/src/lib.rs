//! The vocabulary of the Model Context Protocol's Streamable HTTP transport, shared by its
//! server (`mcp-streamable-server`) and client (`mcp-streamable-client`) and defined here once:
//!
//! - [`ProtocolVersion`]: the revisions spoken, parsed once, ordered, and what each allows;
//! - [`headers`]: the header names;
//! - [`meta`]: the `params._meta` keys of the per-request revision 2026-07-28;
//! - [`codes`]: the JSON-RPC error codes of the transport and the HTTP status each calls for;
//! - [`encode_header_value`] and [`decode_header_value`]: the `=?base64?...?=` codec of the
//!   2026-07-28 headers that mirror the body;
//! - [`param_headers`]: the `Mcp-Param-*` headers a tool's `inputSchema` declares, written by
//!   the client and checked by the server;
//! - [`telemetry`]: what the MCP semantic conventions of OpenTelemetry fix for both sides.
//!
//! Pure: no I/O and no session.
//!
//! # How it is built
//!
//! The modules form layers, top to bottom; a module imports from its own layer and those
//! below it, never from one above:
//!
//! 1. `param_headers`: the `Mcp-Param-*` declarations, the headers written and checked.
//! 2. `header_value`, `headers`, `meta`, `codes`, `version`, `telemetry`: the codec, the names,
//!    the codes, the versions and the conventions' constants; none imports another.
//!
//! ```
//! use mcp_streamable_protocol::{ProtocolVersion, headers};
//!
//! let version: ProtocolVersion = "2025-11-25".parse().unwrap();
//! assert!(version.primes());
//! assert_eq!(headers::MCP_SESSION_ID, "mcp-session-id");
//! ```
#![deny(missing_docs, missing_debug_implementations)]

pub mod codes;
mod header_value;
pub mod headers;
pub mod meta;
pub mod param_headers;
pub mod telemetry;
mod version;

pub use header_value::{DecodeError, decode_header_value, encode_header_value};
pub use version::{ProtocolVersion, UnknownVersion, is_per_request_date};
