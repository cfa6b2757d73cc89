//! The Redis backend against a real Redis, and a real Redis Cluster of three: every test
//! starts its own (`testing::RedisServer`, `testing::RedisCluster`) and stops it.

mod cluster;
mod event_store;
mod keys;
mod notification_bus;
#[cfg(feature = "otel")]
mod otel;
mod outage;
mod rate_store;
#[cfg(feature = "dpop")]
mod replay_cache;
mod session_store;
mod support;
