//! The session core: sessions, their streams and the routing of messages between a client's
//! HTTP requests and the application, knowing nothing of HTTP requests and responses. The HTTP
//! edge (`crate::http`) reaches it only through [`Shared`] and [`Session`]'s API, and maps its
//! [`Error`]s to statuses.
//!
//! Top to bottom:
//! - [`shared`], [`start`], [`takeover`]: what a service's sessions share (config, clock, the
//!   sessions with their cap and reaper), starting sessions and finding them, and a session
//!   taken over from a holder that died;
//! - [`session`]: one session, the state machine: its API (send, begin a POST, close, cancel,
//!   attach the standalone stream, resume), what it holds, how readers take it, its writes to
//!   the stores in order outside its lock, and the application's side, its connection;
//! - [`cluster`]: several nodes, as the core sees them: the seam a shared backend fills, and the
//!   node's lease that every delivery checks;
//! - [`store`]: the event store and the session store, the queue of a session's writes to them,
//!   and the fence every write of a session carries;
//! - [`config`], [`budget`], [`rate_limit`], [`owner`], [`health`], [`error`]: the settings,
//!   the server-wide bound on what all sessions hold, the rate limits, who owns a session,
//!   whether the service is ready for traffic, and the core's errors.

pub(crate) mod budget;
pub(crate) mod cluster;
pub(crate) mod config;
pub(crate) mod error;
pub(crate) mod health;
pub(crate) mod owner;
pub(crate) mod rate_limit;
pub(crate) mod session;
pub(crate) mod shared;
pub(crate) mod start;
pub(crate) mod store;
pub(crate) mod takeover;
#[cfg(feature = "otel")]
pub(crate) mod telemetry;

pub(crate) use error::Error;
pub(crate) use session::Session;
pub(crate) use shared::Shared;
