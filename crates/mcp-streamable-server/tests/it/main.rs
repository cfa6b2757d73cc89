//! Integration tests of `mcp-streamable-server`: the S rows of SPEC.md, through the service
//! without sockets and over loopback TCP.

mod app;
mod harness;
mod smoke;
