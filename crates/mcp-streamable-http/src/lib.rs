#![doc = include_str!("../README.md")]
#![deny(missing_docs, missing_debug_implementations)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use mcp_jsonrpc as jsonrpc;
pub use mcp_sse as sse;
pub use mcp_transport as transport;

/// The Streamable HTTP server (feature `server`).
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use mcp_streamable_server as server;

/// The Streamable HTTP client (feature `client`).
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub use mcp_streamable_client as client;
