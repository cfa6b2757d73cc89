//! The MCP Streamable HTTP transport, in one crate.
//!
//! This facade re-exports the layers of the project so that one dependency brings them all:
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 messages and batches ([`mcp_jsonrpc`]).
//! - [`sse`]: the Server-Sent Events encoder and incremental scanner ([`mcp_sse`]).
//! - [`transport`]: the `Transport` / `Connection` traits, in-memory and stdio transports
//!   ([`mcp_transport`]).
//!
//! # Features
//!
//! - `server`: the Streamable HTTP server (`mcp-streamable-server`); not written yet.
//! - `client`: the Streamable HTTP client (`mcp-streamable-client`); not written yet.
//! - `full`: both.
//!
//! No feature is on by default.
#![deny(missing_docs, missing_debug_implementations)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use mcp_jsonrpc as jsonrpc;
pub use mcp_sse as sse;
pub use mcp_transport as transport;

/// The Streamable HTTP server (feature `server`).
#[cfg(feature = "server")]
pub use mcp_streamable_server as server;

/// The Streamable HTTP client (feature `client`).
#[cfg(feature = "client")]
pub use mcp_streamable_client as client;
