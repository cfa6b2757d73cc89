//! Several nodes serving one set of sessions (N1-N10), above the session core and below the
//! HTTP edge: where a session is ([`route`]), the forwarded requests and their signature
//! ([`sign`]), the connections to the peers ([`peers`]), the directory of holders
//! ([`directory`]), what a node does when its lease lapses and comes back ([`reclaim`]), and
//! the in-memory network the tests run on ([`memory`]).
//!
//! The seam a shared backend fills, and the fences and lease it keeps, are the core's
//! (`core::cluster`, `core::lease`): the core checks them on every delivery and write.

pub(crate) mod directory;
pub(crate) mod memory;
pub(crate) mod peers;
pub(crate) mod reclaim;
pub(crate) mod route;
pub(crate) mod sign;

use std::sync::Arc;
use std::time::Duration;

use crate::core::cluster::Cluster;

/// How long a forward may wait for the holder to take it (the head of its answer): a holder
/// that has not by then is taken for unreachable, and a holder that gets it later delivers
/// nothing of it. Generous against a loaded holder: asking again costs a round trip, never a
/// second delivery (N9).
pub(crate) const FORWARD_DEADLINE: Duration = Duration::from_secs(2);

/// What a node keeps to serve the sessions other nodes hold.
pub(crate) struct Nodes {
    pub(crate) cluster: Arc<dyn Cluster>,
    pub(crate) directory: directory::Directory,
    pub(crate) peers: peers::Peers,
    /// Whether the node's tasks run: serving the peers, following the lease.
    pub(crate) started: std::sync::Once,
}

impl Nodes {
    pub(crate) fn new(cluster: Arc<dyn Cluster>) -> Self {
        Nodes {
            cluster,
            directory: directory::Directory::default(),
            peers: peers::Peers::default(),
            started: std::sync::Once::new(),
        }
    }
}
