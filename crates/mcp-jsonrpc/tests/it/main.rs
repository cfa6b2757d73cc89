//! Integration tests of `mcp-jsonrpc`: the J rows of SPEC.md, malformed input, round trips.

mod malformed;
mod roundtrip;
mod rows;
mod spec;
