//! The Redis backend against a real Redis: every test starts its own (`testing::RedisServer`)
//! and stops it.

mod cluster;
mod event_store;
mod keys;
mod outage;
mod session_store;
mod support;
