//! What a client found out about its endpoint's era, shared by all its connections (M7).

use std::sync::{Mutex, PoisonError};

use mcp_streamable_protocol::ProtocolVersion;

use crate::config::Era;

/// What the first request found out about the endpoint, with the version to speak there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The per-request protocol, in this version.
    PerRequest(ProtocolVersion),
    /// The session-based protocol, asking for this version in `initialize`.
    Session(ProtocolVersion),
}

/// What a [`Client`](crate::Client) knows of its endpoint's era, shared by its connections.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    found: Mutex<Option<Found>>,
    /// Held while a request finds out, so that concurrent first requests, from any connection,
    /// probe the endpoint once.
    pub(crate) probing: tokio::sync::Mutex<()>,
}

impl Discovery {
    pub(crate) fn found(&self) -> Option<Found> {
        *self.found.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn remember(&self, found: Found) {
        let mut known = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        if *known != Some(found) {
            tracing::debug!(?found, "endpoint era found");
            *known = Some(found);
        }
    }

    /// The era spoken for the messages the transport shapes: the pinned one, or what
    /// [`Era::Auto`] found (`None` before that).
    pub(crate) fn era(&self, setting: Era) -> Option<Era> {
        match (setting, self.found()) {
            (Era::Auto, Some(Found::PerRequest(_))) => Some(Era::Modern),
            (Era::Auto, Some(Found::Session(_))) => Some(Era::Legacy),
            (Era::Auto, None) => None,
            (pinned, _) => Some(pinned),
        }
    }
}
