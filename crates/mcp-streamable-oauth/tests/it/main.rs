//! Integration tests: the provider against a fake authorization server and resource on
//! loopback, asked as the transport asks it.

mod fake;
mod flows;
mod world;
