//! Several nodes of one MCP Streamable HTTP server, sharing their sessions through Redis.
//!
//! A [`RedisBackend`] is one node's connection to Redis. It hands out the three seams of
//! `mcp-streamable-server` that a node behind a load balancer needs, all sharing its
//! connections:
//! - [`event_store`](RedisBackend::event_store): an
//!   [`EventStore`](mcp_streamable_server::EventStore), so that a client resumes a stream on
//!   whichever node it reaches, and a node follows what another writes;
//! - [`session_store`](RedisBackend::session_store): a
//!   [`SessionStore`](mcp_streamable_server::SessionStore), so that every node knows every
//!   session;
//! - [`cluster`](RedisBackend::cluster): a [`Cluster`](mcp_streamable_server::Cluster), so that
//!   a session's application runs on one node at a time (its holder, which holds a lease), the
//!   others forward it their requests, and a dead holder's sessions are taken over.
//!
//! Once the cluster is handed out, the event store writes only to sessions this node holds:
//! a node whose session was taken over while it was alive (its lease lapsed while Redis was
//! away, or while it stalled), or that Redis forgot, has its next append refused with an
//! [`Error`] that [`is_not_holder`](Error::is_not_holder), and writes nothing over the
//! holder's records (or back into an empty Redis).
//!
//! The in-memory stores stay the server's default: nothing here is used unless asked for.
//!
//! ```no_run
//! use std::time::Duration;
//! use mcp_streamable_redis::{Options, RedisBackend};
//! use mcp_streamable_server::Config;
//!
//! # async fn run() -> Result<(), mcp_streamable_redis::Error> {
//! let idle = Duration::from_secs(600);
//! let options = Options::default().prefix("myapp").session_expiry(idle);
//! let backend = RedisBackend::connect("redis://127.0.0.1:6379/", options).await?;
//! let config = Config::default()
//!     .idle_timeout(idle)
//!     .session_store(backend.session_store())
//!     .event_store(backend.event_store())
//!     .cluster(backend.cluster());
//! # let _ = config;
//! # Ok(())
//! # }
//! ```
//!
//! # Keys and channels
//! Everything is under the [prefix](Options::prefix) (`mcp` by default, `P` below); a
//! session's keys carry its id in braces (a Redis Cluster hash tag, one slot per session).
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `P:session:{S}` | hash | the record: `initialize`, `active` (the last request's time), `owner`, `version`; `generations` counts the takeovers |
//! | `P:holder:{S}` | hash | the holder: `node` and `gen` (0 for the node that started the session) |
//! | `P:log:{S}` | list | the session's events, all its streams, oldest first, each `"<stream> <index> <message>"` (a list, not a Redis stream: Redis 7 gives each new stream 4 KiB up front) |
//! | `P:meta:{S}` | hash | its streams: `l:N` (stream N's last index, kept while N has events kept), `f:N` (N is finished), `e:N` (how far it was evicted), `b:N` (the rank it began at and its request ids as JSON), `hi` (the highest stream), `bytes`, `seq` |
//! | `P:node:NODE` | string | alive while the node's lease is: set with `PX` = the lease, every third of it |
//!
//! | channel | what |
//! | --- | --- |
//! | `P:inbox:NODE` | the envelopes forwarded to the node, and the answers to its own forwards |
//! | `P:watch:{S}` | the number of each stream of the session written to |
//!
//! Every key of a session expires a quarter past the [session expiry](Options::session_expiry)
//! after its last write or [`touch`](mcp_streamable_server::SessionStore::touch) (the server
//! touches at most once per quarter of its idle timeout), and a DELETE
//! ([`SessionStore::remove`](mcp_streamable_server::SessionStore::remove),
//! [`EventStore::session_closed`](mcp_streamable_server::EventStore::session_closed),
//! [`Cluster::release`](mcp_streamable_server::Cluster::release)) leaves none of them.
//! A session keeps at most [`max_events_per_session`](Options::max_events_per_session) events
//! and [`max_bytes_per_session`](Options::max_bytes_per_session) bytes, the oldest trimmed
//! first; a replay from before them answers
//! [`Purged`](mcp_streamable_server::ReplayError::Purged). The bound across sessions is Redis's
//! own: set `maxmemory` with `maxmemory-policy noeviction`, and a full Redis refuses writes,
//! which fail as errors (a new session is refused with 503; an event not kept is logged, and
//! cannot be resumed), until there is room again. An evicting policy would drop sessions' keys
//! instead, which ends those sessions.
//!
//! # Connections per node
//! Two, whatever the number of sessions and open streams:
//! - one multiplexed command connection (the `redis` crate's `ConnectionManager`, pipelined,
//!   reconnecting), shared by every call of the three seams and by the lease renewal;
//! - one pub/sub connection, subscribed to the node's inbox and to the watch channel of each
//!   session the node has a watch on (subscribed with the first watch of a session,
//!   unsubscribed within a third of a lease of its last being dropped).
//!
//! No call blocks a connection: a stream's reader waits on its watch, fed by the pub/sub
//! connection, and reads the store when told something was written. A watch is subscribed in
//! the background, a moment after [`watch`](mcp_streamable_server::Cluster::watch) returns;
//! once it is, the watch is woken with a
//! [`Written`](mcp_streamable_server::Change::Written), so that a write published in between
//! (heard by nobody) is read all the same.
//!
//! # When Redis is down or slow
//! - Every call fails within the [command timeout](Options::command_timeout) with an
//!   [`Error`] (boxed as a [`StoreError`](mcp_streamable_server::StoreError)); nothing
//!   panics, nothing queues without bound. Calls that cannot return an error (`release`,
//!   `written`, `stream_finished`, `session_closed`, `remove`) log a warning.
//! - The command connection reconnects on the next call; the pub/sub connection reconnects
//!   by itself (within half a second of Redis being back) and subscribes again to everything;
//!   since writes may have been published while it was away, every watch is then woken with a
//!   [`Written`](mcp_streamable_server::Change::Written), so that its reader reads the store
//!   afresh.
//! - The lease renewal keeps trying every third of a lease. A node cut off from Redis longer
//!   than its lease loses its sessions to the next node that locates them.
//! - A forward fails at once when no node listens on the target's inbox, or the target's inbox
//!   is full, and after the [forward timeout](Options::forward_timeout) when it does not answer.
//!
//! # Features
//! - `testing`: `testing::RedisServer`, a throwaway `redis-server` for tests.

#![deny(missing_docs, missing_debug_implementations)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod backend;
mod cluster;
mod error;
mod event_store;
mod forward;
mod keys;
mod lease;
mod options;
mod pubsub;
mod scripts;
mod session_store;
mod watches;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use crate::backend::RedisBackend;
pub use crate::cluster::RedisCluster;
pub use crate::error::Error;
pub use crate::event_store::RedisEventStore;
pub use crate::options::{
    DEFAULT_COMMAND_TIMEOUT, DEFAULT_FORWARD_TIMEOUT, DEFAULT_INBOX_CAPACITY, DEFAULT_LEASE,
    DEFAULT_MAX_BYTES_PER_SESSION, DEFAULT_MAX_EVENTS_PER_SESSION, DEFAULT_MAX_PENDING_FORWARDS,
    DEFAULT_PREFIX, DEFAULT_SESSION_EXPIRY, Options,
};
pub use crate::session_store::RedisSessionStore;
