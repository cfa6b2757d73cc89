//! What the examples and their tests share, as a library rather than files each includes:
//!
//! - [`echo_app`]: the application of `echo_server`, which `tests/it` drives without sockets;
//! - [`echo_modern`]: what it adds for 2026-07-28: listen streams, input-required rounds with a
//!   sealed state, `Mcp-Param-*` declarations;
//! - [`serve`]: serving a `StreamableHttpService` at `/mcp` over TCP, as the example servers do;
//! - [`cli`]: the flags the example servers share (the `Host` and `Origin` allow lists);
//! - [`browser`]: a browser without a user, for the conformance client and the OAuth tests;
//! - [`proxy`]: a load balancer without session affinity, for the tests of several nodes and
//!   for the load benchmark (`mcp-proxy`), which so measures the proxy those tests trust.
//!
//! The examples themselves are programs (`cargo run --example NAME`); this library is not
//! published and promises nothing beyond them.

#![deny(missing_docs)]

pub mod browser;
pub mod cli;
pub mod echo_app;
pub mod echo_modern;
pub mod proxy;
pub mod serve;
