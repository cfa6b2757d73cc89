//! Integration tests of `mcp-jsonrpc`: the J rows of SPEC.md, malformed input, agreement with
//! JSON-RPC 2.0 and RFC 8259, round trips, and the differential fuzzer with its reference.

mod fuzz;
mod malformed;
mod reference;
mod roundtrip;
mod rows;
mod spec;
