//! The Streamable HTTP **server** transport for the Model Context Protocol.
//!
//! This crate is not written yet. It will hold a hyper and `tower` service that serves MCP
//! sessions over the Streamable HTTP transport (protocol revisions 2025-03-26 to 2025-11-25):
//! session management, request and standalone SSE streams, an event store for resumption,
//! JSON-response and stateless modes, Origin/Host validation and bounded memory per session.
//! The wire behaviour it will promise is the `S` rows of the project's `SPEC.md`.
//!
//! Until then it exports nothing.
#![deny(missing_docs, missing_debug_implementations)]
