//! Integration tests: the provider against a fake authorization server and resource on
//! loopback, asked as the transport asks it.

mod client;
mod dpop;
mod fake;
mod federation;
mod flows;
#[cfg(feature = "rustls")]
mod tls;
mod world;
