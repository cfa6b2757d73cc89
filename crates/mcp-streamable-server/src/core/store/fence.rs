//! The fencing token every write of a session carries (N8), and the error of a write it does
//! not allow.

use std::fmt;

/// The fencing token of a session's holding: the incarnation of the node holding it and the
/// session's generation (0 for the node that started it, one more at each takeover). Every
/// write and delete of the session in the shared records carries it, and is refused with
/// [`NotHolder`] when the records name another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Fence {
    /// The holder's incarnation: random, new at each start of the node and each time its lease
    /// lapsed.
    pub incarnation: u64,
    /// How many holders the session had before this one.
    pub generation: u64,
}

impl Fence {
    /// The token of a holding by `incarnation`, of a session at `generation`.
    pub fn new(incarnation: u64, generation: u64) -> Self {
        Fence {
            incarnation,
            generation,
        }
    }
}

/// What a shared [`EventStore`](crate::EventStore) or [`SessionStore`](crate::SessionStore) returns when a write's [`Fence`] is not the
/// session's holding any more: another node took it over (this node stalled, or its lease
/// lapsed while the shared records were out of reach), or the records forgot it. The node
/// then ends its own copy of the session, leaving the records to the holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotHolder;

impl fmt::Display for NotHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("this node no longer holds the session")
    }
}

impl std::error::Error for NotHolder {}
