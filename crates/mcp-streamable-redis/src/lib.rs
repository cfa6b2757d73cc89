//! Several nodes of one MCP Streamable HTTP server, sharing their sessions through Redis or a
//! Redis Cluster.
//!
//! A [`RedisBackend`] is one node's connection to Redis. Its [`cluster`](RedisBackend::cluster)
//! is the [`Cluster`](mcp_streamable_server::Cluster) a node behind a load balancer needs, with
//! the shared [`EventStore`](mcp_streamable_server::EventStore) (a client resumes a stream on
//! whichever node it reaches) and [`SessionStore`](mcp_streamable_server::SessionStore) (every
//! node knows every session) it brings: a session's application runs on one node at a time, its
//! holder; a request reaching another node goes to the holder over HTTP/2, node to node; a dead
//! holder's sessions are taken over within a lease.
//!
//! ```no_run
//! use std::time::Duration;
//! use mcp_streamable_redis::{Options, RedisBackend};
//! use mcp_streamable_server::Config;
//!
//! # async fn run() -> Result<(), mcp_streamable_redis::Error> {
//! let idle = Duration::from_secs(600);
//! let options = Options::default()
//!     .prefix("myapp")
//!     .session_expiry(idle)
//!     .peer_addr("10.0.0.7:7001".parse().unwrap());
//! let backend = RedisBackend::connect("redis://10.0.0.5:6379/", options).await?;
//! let config = Config::default().idle_timeout(idle).cluster(backend.cluster());
//! # let _ = config;
//! # Ok(())
//! # }
//! ```
//!
//! # What the nodes need of each other
//! Each node listens for the others at [`peer_addr`](Options::peer_addr) (the loopback by
//! default: give an address of the network between the nodes) and advertises it in the
//! membership ([`advertise`](Options::advertise) when it is not the one bound). The requests
//! there are HTTP/2, signed with a key the nodes share ([`secret`](Options::secret), or one the
//! first node stores in Redis), not encrypted: keep the port off the clients' network, or tunnel
//! it. Nodes that cannot reach each other still share sessions, with a load balancer that
//! keeps each session on one node (affinity on `Mcp-Session-Id`); a request that lands on
//! another node then waits, at most a few leases, for the holder, and is refused with 503.
//! Their clocks should agree within a second: a forward carries a deadline past which its
//! holder drops it.
//!
//! # Fencing
//! Each start of a node is a new *incarnation* of it, random; each session has a *generation*,
//! 0 for the node that started it, one more at each takeover. Every write and delete of a
//! session carries the writer's (node, incarnation, generation), checked in the script that
//! makes it: a node whose session was taken over changes nothing of it any more. A node holds
//! its sessions while its lease does, by its own clock from the sending of its last renewal
//! that Redis acknowledged: past it (paused, or cut off from Redis), it delivers nothing to its
//! applications, lets nothing out of its streams, and ends its streams after a second. Back, it
//! registers as a new incarnation and claims its sessions again, those nobody took over
//! meanwhile (the same application goes on); it ends its copies of the others. A takeover is a
//! compare-and-swap of the holder read. After Redis restarted, failed over or was out of reach
//! for a lease, nobody takes a session over for one lease: the live nodes renew first.
//!
//! # Keys
//! Everything is under the [prefix](Options::prefix) (`mcp` by default, `P` below). A session's
//! keys carry its id in braces (a Redis Cluster hash tag: one slot per session), and every
//! script touches one slot.
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `P:{S}` | hash | the holder (`node`, `inc`, `gen`), `active`, `ver`, and the streams' bookkeeping: `st` (the open streams, a line each: its last index, how far it was evicted, what its list keeps, its rank, forward and requests; `0 -` and none for a stream opened without requests), `seq` (the order of events and streams), `hi` (the highest stream), `bytes`, `count`, `fbytes`, `fcount` (what the open and the finished streams keep), `fhead` (when the oldest finished stream finished), `exp`, `fexp` (when the keys' lifetimes were last renewed) |
//! | `P:{S}:r` | string | the record: the owner and the `initialize` request |
//! | `P:{S}:N` | list | open stream N's events, oldest first, each `"<seq> <index> <message>"` (a finished stream's, when they came before its end) |
//! | `P:{S}:f` | hash | each finished stream's bookkeeping, and its events when they came with its end (most requests' streams: their answer) |
//! | `P:{S}:q` | list | the finished streams, in the order they finished: the order they go |
//! | `P:{S}:w:ID` | string | the stream forward ID began, for 10 s: sent again, it begins nothing |
//! | `P:{m}:members` | hash | each node's incarnation, address, and lease expiry by Redis's clock |
//! | `P:{m}:up` | string | since when renewals have come without a break of a lease |
//! | `P:{m}:secret` | string | the key forwards are signed with, unless the nodes were given one |
//! | `P:dpop:ID` | string | a DPoP proof accepted (feature `dpop`), for as long as a replay of it could be taken (`RedisBackend::replay_cache`, a `RedisReplayCache`) |
//! | `P:rl:{CLIENT}:NAME` | string | a client's rate-limit bucket (`*`, or a method): its next request's theoretical arrival time by Redis's clock, kept until refilled ([`RedisRateStore`]) |
//!
//! A session's hash and record live a quarter past the [session
//! expiry](Options::session_expiry) after its last request, an open stream's list as long, a
//! finished stream the [resume window](Options::resume_window): an idle session holds its hash
//! and record only. A session keeps at most
//! [`max_events_per_session`](Options::max_events_per_session) events and
//! [`max_bytes_per_session`](Options::max_bytes_per_session) bytes, each finished stream's
//! bookkeeping counted too; past a cap, finished streams go first, whole, the oldest finished
//! first, then the open streams' oldest events, down to a sixteenth under the cap. A replay
//! from before what is kept answers [`Purged`](mcp_streamable_server::ReplayError::Purged).
//! DELETE leaves no key of the session but the forwards' (which expire within 10 s). A request
//! costs Redis two scripts, one before its delivery (`begin`) and one with its answer
//! (`write`), of a few commands each however much the session keeps; Redis 6.2 or later.
//! The bound across sessions is Redis's own: set `maxmemory` with `maxmemory-policy
//! noeviction`, and a full Redis refuses writes, which fail as errors (a new session is refused
//! with 503; an event not kept is logged, and cannot be resumed), until there is room again.
//!
//! # Connections per node
//! Two, whatever the number of sessions and streams: one multiplexed command connection
//! (pipelined, reconnecting; per master on a cluster) for the seams, and one for the lease,
//! on a thread of its own, so that neither the application's runtime nor the seams' traffic
//! delay a renewal. No pub/sub: the nodes talk to each other directly.
//!
//! # When Redis is down or slow
//! - Every call fails within the [command timeout](Options::command_timeout) with an
//!   [`Error`] (boxed as a [`StoreError`](mcp_streamable_server::StoreError)); nothing
//!   panics, nothing queues without bound. Calls that cannot return an error (`close`, `remove`,
//!   `end`, `hand_over`) log a warning.
//! - The connections reconnect by themselves.
//! - Out of reach longer than two thirds of a lease, a node fences itself (above), and comes
//!   back by itself.
//!
//! # How it is built
//! The modules form layers, top to bottom; a module imports from its own layer and the ones
//! below it, never from one above (a tidy test holds the code to this list):
//!
//! 1. `backend`: the factory, which makes a node and hands out its seams; nothing imports it.
//! 2. `cluster`: the `Cluster` seam, which carries the two stores.
//! 3. `event_store`, `session_store`, `rate_store`, `replay_cache`, `notification_bus`: the
//!    store seams, and the bus of the listen streams.
//! 4. `lease`: the keeper of the node's lease, on a thread of its own.
//! 5. `node`, `members`: what the seams share (the node core), and the membership as last read.
//! 6. `connection`, `keys`, `scripts`, `options`, `error`: the connections to Redis, the names
//!    of the keys, the Lua scripts, the settings, the one error type.
//!
//! # Features
//! - `dpop`: `RedisBackend::replay_cache`, DPoP's replay cache shared by the nodes.
//! - `testing`: `testing::RedisServer`, a throwaway `redis-server` for tests, and
//!   `testing::RedisCluster`, a throwaway Redis Cluster of three.
//! - `otel`: the server's feature `otel`, for this crate's tests of telemetry across nodes; the
//!   crate records nothing itself (the server times every call of its stores).

#![deny(missing_docs, missing_debug_implementations)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod backend;
mod cluster;
mod connection;
mod error;
mod event_store;
mod keys;
mod lease;
mod members;
mod node;
mod notification_bus;
mod options;
mod rate_store;
#[cfg(feature = "dpop")]
mod replay_cache;
mod scripts;
mod session_store;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use crate::backend::RedisBackend;
pub use crate::cluster::RedisCluster;
pub use crate::error::Error;
pub use crate::event_store::RedisEventStore;
pub use crate::notification_bus::RedisNotificationBus;
pub use crate::options::{
    DEFAULT_COMMAND_TIMEOUT, DEFAULT_LEASE, DEFAULT_MAX_BYTES_PER_SESSION,
    DEFAULT_MAX_EVENTS_PER_SESSION, DEFAULT_PEER_ADDR, DEFAULT_PREFIX, DEFAULT_RESUME_WINDOW,
    DEFAULT_SESSION_EXPIRY, Options, parse_advertised,
};
pub use crate::rate_store::RedisRateStore;
#[cfg(feature = "dpop")]
#[cfg_attr(docsrs, doc(cfg(feature = "dpop")))]
pub use crate::replay_cache::RedisReplayCache;
pub use crate::session_store::RedisSessionStore;
