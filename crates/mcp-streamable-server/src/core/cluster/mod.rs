//! Several processes serving one set of sessions: the seam a shared backend (Redis, in the
//! `mcp-streamable-redis` crate) fills, and its reference in one process's memory.
//!
//! A session's application runs on one node at a time, its *holder*, which holds the session's
//! lease. A request that reaches another node is handed to the holder as an envelope
//! ([`Cluster::forward`]); the holder writes what the application sends to the shared
//! [`EventStore`], and the node holding the client's HTTP response reads it from there, woken by
//! [`Cluster::watch`]. When a holder's lease lapses (the process died), the next node that
//! [`locate`](Cluster::locate)s the session takes it over and starts its application again
//! from the stored `initialize`.
//!
//! [`EventStore`]: crate::EventStore

mod memory;

use std::fmt;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::core::event_store::{StoreError, StoreFuture};

pub use memory::{InMemoryCluster, InMemoryNetwork};

/// In the extensions of the parts handed to the factory when a node starts a session's
/// application again, its holder having died: the application is handed the session's stored
/// `initialize` request (its answer goes nowhere) and `notifications/initialized`, then the
/// session's traffic. What it kept in memory of the session is gone; the client does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Restarted {
    /// The session's holder count: 1 for the first restart.
    pub generation: u64,
}

/// Where a session's application runs, as [`Cluster::locate`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// No node holds a session of this id: it never existed, or it ended.
    Unknown,
    /// This node holds it.
    Here,
    /// Another node, whose lease is live, holds it.
    Elsewhere {
        /// The holder, as its [`Cluster::node`] names it.
        node: String,
    },
    /// The holder's lease had lapsed, and this node holds the session now: it must start the
    /// session's application again. `generation` counts the holders the session has had, the
    /// first being 0; it is never handed out twice for one session.
    TakenOver {
        /// This holder's number: at least 1.
        generation: u64,
    },
}

/// What a shared [`EventStore`](crate::EventStore) returns from
/// [`append`](crate::EventStore::append) when the node writing no longer holds the session:
/// another node took it over (this node's lease was taken for lapsed, say while the shared
/// store restarted). The node then ends its own copy of the session, leaving the shared records
/// to the holder, so that two applications never serve one session for long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotHolder;

impl fmt::Display for NotHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("this node no longer holds the session")
    }
}

impl std::error::Error for NotHolder {}

/// What [`Cluster::watch`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// Something was written to a stream of the session ([`Cluster::written`]), on any node.
    Written {
        /// The stream written to.
        stream: u64,
    },
    /// The node the watch named as holder lost its lease: whoever waits on the session should
    /// [`locate`](Cluster::locate) it again.
    HolderLost,
}

/// The changes of one session, as [`Cluster::watch`] hands them out.
///
/// The channel may be small: a cluster that finds it full drops the change, since the watcher
/// has one pending and reads the store afresh on each; so a watcher takes any
/// [`Change::Written`] as news of every stream of the session. Dropping the receiver ends the
/// watch.
pub type Watch = mpsc::Receiver<Change>;

/// An envelope another node forwarded to this one, with the way to answer it.
#[non_exhaustive]
pub struct Forwarded {
    /// The envelope, as the sending node's service wrote it.
    pub envelope: Bytes,
    /// Where the answer goes: dropping it unanswered fails the sender's
    /// [`forward`](Cluster::forward).
    pub reply: oneshot::Sender<Bytes>,
}

impl Forwarded {
    /// An envelope and its reply channel.
    pub fn new(envelope: Bytes, reply: oneshot::Sender<Bytes>) -> Self {
        Forwarded { envelope, reply }
    }
}

impl fmt::Debug for Forwarded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Forwarded")
            .field("envelope_bytes", &self.envelope.len())
            .finish_non_exhaustive()
    }
}

/// The nodes serving one set of sessions, as one of them sees them: who holds which session,
/// the way to hand a holder a request, and news of what was written to a session's streams.
///
/// Give it to [`Config::cluster`](crate::Config::cluster) with a [`SessionStore`] and an
/// [`EventStore`] that every node shares. The service calls [`hold`](Cluster::hold) when it
/// starts a session, [`locate`](Cluster::locate) when a request names a session it does not
/// hold, [`release`](Cluster::release) when a session it holds ends, and
/// [`written`](Cluster::written) after each write to the event store; it takes the
/// [`inbox`](Cluster::inbox) once and answers every envelope in it.
///
/// A cluster bounds what it keeps: a forward waits at most its own timeout, and fails when
/// the node named is gone.
///
/// [`SessionStore`]: crate::SessionStore
/// [`EventStore`]: crate::EventStore
pub trait Cluster: Send + Sync + 'static {
    /// This node's name, unique among the nodes.
    fn node(&self) -> &str;

    /// A session starts on this node: the node holds it from now on, as holder 0.
    fn hold<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<(), StoreError>>;

    /// Who holds session `session`; if its holder's lease lapsed, this node takes it over
    /// ([`Location::TakenOver`]), in one step that no other node can take at the same time.
    fn locate<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<Location, StoreError>>;

    /// A session this node held ended: nobody holds it any more.
    fn release<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;

    /// This node lets go of a session that goes on (it shuts down): the next node to
    /// [`locate`](Cluster::locate) it takes it over, as from a holder that died. The default
    /// calls [`release`](Cluster::release), which is right for a cluster whose `locate` takes
    /// over a session that has a record in the shared [`SessionStore`](crate::SessionStore) and
    /// no holder.
    fn hand_over<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.release(session)
    }

    /// Hands `envelope` to `node` and waits for its answer.
    fn forward<'a>(
        &'a self,
        node: &'a str,
        envelope: Bytes,
    ) -> StoreFuture<'a, Result<Bytes, StoreError>>;

    /// The envelopes other nodes forward to this one. The service takes it once, when it is
    /// built; later calls return `None`.
    fn inbox(&self) -> Option<mpsc::Receiver<Forwarded>>;

    /// Tells the session's watchers, on every node, that `stream` was written to.
    fn written<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()>;

    /// The changes of `session` from now on; `holder` is the node the watcher believes holds
    /// it, whose lapse the watch reports as [`Change::HolderLost`].
    fn watch(&self, session: &str, holder: &str) -> Watch;
}
