//! What a client found out about its endpoint's family, shared by all its connections (M7).

use std::sync::{Mutex, PoisonError};

use mcp_streamable_protocol::ProtocolVersion;

use crate::config::Family;

/// What the first request found out about the endpoint, with the version to speak there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The per-request protocol, in this version.
    PerRequest(ProtocolVersion),
    /// The session-based protocol, asking for this version in `initialize`.
    Session(ProtocolVersion),
}

/// What a [`Client`](crate::Client) knows of its endpoint's family, shared by its connections.
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
            tracing::debug!(?found, "endpoint family found");
            *known = Some(found);
        }
    }

    /// The family spoken for the messages the transport shapes: the pinned one, or what
    /// [`Family::Auto`] found (`None` before that).
    pub(crate) fn family(&self, setting: Family) -> Option<Family> {
        match (setting, self.found()) {
            (Family::Auto, Some(Found::PerRequest(_))) => Some(Family::PerRequest),
            (Family::Auto, Some(Found::Session(_))) => Some(Family::Session),
            (Family::Auto, None) => None,
            (pinned, _) => Some(pinned),
        }
    }
}
