//! The Streamable HTTP **client** transport for the Model Context Protocol.
//!
//! This crate is not written yet. It will hold a hyper-based client that implements the
//! `mcp-transport` traits: one POST per message, JSON and SSE replies, the standalone GET stream,
//! resumption with `Last-Event-ID`, reconnection with backoff, typed errors and session close.
//! The wire behaviour it will promise is the `C` rows of the project's `SPEC.md`.
//!
//! Until then it exports nothing.
#![deny(missing_docs, missing_debug_implementations)]
