//! Integration tests of `mcp-streamable-server`: the S rows of SPEC.md, through the service
//! without sockets and over loopback TCP. Tests are named after the row they pin.

mod app;
#[cfg(feature = "auth")]
mod auth;
#[cfg(feature = "auth")]
mod auth_dpop;
mod bad_input;
mod cluster;
mod core_defects;
mod harness;
#[cfg(feature = "serve")]
mod health;
mod idle;
mod lifecycle;
mod listen;
mod load;
mod logs;
mod memory;
mod modern;
mod modern_app;
#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "otel")]
mod otel_ends;
#[cfg(feature = "otel")]
mod otel_transport;
#[cfg(feature = "otel")]
mod otlp;
mod over_tcp;
mod param_headers;
mod rate_limit;
mod request_parts;
mod resume;
mod routing;
mod rows_post;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "serve")]
mod serve_h2;
#[cfg(feature = "serve")]
mod serve_shutdown;
#[cfg(feature = "tls")]
mod serve_tls;
mod session_caps;
mod session_store;
mod shutdown;
mod smoke;
mod stateless;
mod store;
mod tcp;
