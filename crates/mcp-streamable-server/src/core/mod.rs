//! The session core: sessions, their streams and the routing of messages between a client's
//! HTTP requests and the application, knowing nothing of HTTP requests and responses. The HTTP
//! edge (`crate::http`) reaches it only through [`Context`] and [`Session`]'s API, and maps its
//! [`Error`]s to statuses.
//!
//! - [`context`]: what a service's sessions share (config, clock, the sessions with their
//!   cap and reaper);
//! - [`start`]: starting sessions and finding them;
//! - [`session`], [`begin`], [`lifecycle`], [`attach`]: one session's API (send, begin a
//!   POST, close, cancel, attach the standalone stream, resume);
//! - [`state`], [`queue`], [`reader`], [`budget`]: what a session holds, how readers take it,
//!   and the server-wide bound on what all sessions hold;
//! - [`store_writer`], [`event_store`], [`session_store`]: the stores, written in order
//!   outside the session's lock;
//! - [`cluster`], [`fence`], [`lease`], [`takeover`]: several nodes, as the core sees them:
//!   the seam a shared backend fills, the token every write of a session carries, the node's
//!   lease that every delivery checks, and a session taken over from a holder that died;
//! - [`rate_limit`]: what a client's requests cost and the buckets that keep count;
//! - [`connection`]: the application's side.

pub(crate) mod attach;
pub(crate) mod begin;
pub(crate) mod budget;
pub(crate) mod cluster;
pub(crate) mod config;
pub(crate) mod connection;
pub(crate) mod context;
pub(crate) mod error;
pub(crate) mod event_store;
pub(crate) mod fence;
pub(crate) mod lease;
pub(crate) mod lifecycle;
pub(crate) mod owner;
pub(crate) mod queue;
pub(crate) mod rate_limit;
pub(crate) mod reader;
pub(crate) mod session;
pub(crate) mod session_store;
pub(crate) mod start;
pub(crate) mod state;
pub(crate) mod store_queue;
pub(crate) mod store_writer;
pub(crate) mod takeover;

pub(crate) use context::Context;
pub(crate) use error::Error;
pub(crate) use session::Session;
