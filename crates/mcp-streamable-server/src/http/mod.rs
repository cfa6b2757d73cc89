//! The HTTP edge: the service, origin checks, the POST of each family (`post`, `modern`,
//! `local`), GET (`get`), DELETE (`delete`), the answers and their bodies (`reply`), the request log
//! (`request_log`). It validates each HTTP request, then talks to the session core
//! (`crate::core`) only through its API, and maps the core's errors to statuses (`error`).
//!
//! With a cluster (`crate::cluster` finds where a session is): `remote` sends a request of a
//! session held elsewhere to its holder, `relay` relays the holder's stream to the client and
//! asks for it again where it breaks, and `peer` serves the requests other nodes send here.

pub(crate) mod app;
#[cfg(feature = "auth")]
pub(crate) mod auth;
pub(crate) mod checks;
pub(crate) mod delete;
pub(crate) mod error;
pub(crate) mod get;
pub(crate) mod local;
pub(crate) mod modern;
pub(crate) mod origin;
pub(crate) mod peer;
pub(crate) mod post;
pub(crate) mod read;
pub(crate) mod relay;
pub(crate) mod remote;
pub(crate) mod reply;
pub(crate) mod request_log;
pub(crate) mod service;
