//! The lanes, one per way of talking to the endpoint: the session-based protocol
//! ([`session`]), the per-request protocol of 2026-07-28 ([`per_request`]), and the 2024-11-05
//! HTTP+SSE transport the session lane falls back to ([`http_sse`]).

pub(crate) mod http_sse;
pub(crate) mod per_request;
pub(crate) mod session;
