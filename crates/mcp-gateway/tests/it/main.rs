//! Integration tests of `mcp-gateway`: the gateway in front of a small stdio server
//! (`tests/children/server.py`, run by python3), driven over HTTP on loopback by our client,
//! in both families; and its faults, each a test; two gateway processes as nodes on one Redis;
//! the binary's flags for telemetry, authorization and the names it answers, and its OTLP.

mod binary;
mod bounds;
mod connect;
mod faults;
mod harness;
mod log;
mod nodes;
mod operate;
mod otlp;
mod per_request;
mod session;
mod shutdown;
mod tls;
