//! The HTTP edge: the service, origin checks, the POST of each family, GET, DELETE, the
//! answers and their bodies. It validates each HTTP request, then talks to the session core
//! (`crate::core`) only through its API, and maps the core's errors to statuses (`error`).
//!
//! With a cluster: `remote` finds where a named session is held and hands requests to its
//! holder as `envelope`s, `follow` reads the answer's stream from the shared store, `holder`
//! answers the envelopes of other nodes, and `relay` keeps the standalone streams relayed
//! either way.

pub(crate) mod app;
#[cfg(feature = "auth")]
pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod checks;
pub(crate) mod envelope;
pub(crate) mod error;
pub(crate) mod follow;
pub(crate) mod get;
pub(crate) mod holder;
pub(crate) mod modern;
pub(crate) mod origin;
pub(crate) mod post;
pub(crate) mod read;
pub(crate) mod relay;
pub(crate) mod remote;
pub(crate) mod reply;
pub(crate) mod response_body;
pub(crate) mod service;
