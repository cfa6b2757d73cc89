//! Several processes serving one set of sessions: the seam a shared backend (Redis, in the
//! `mcp-streamable-redis` crate) fills, as the session core sees it.
//!
//! A session's application runs on one node at a time, its *holder*. Every write of a session
//! to the shared records carries its [`Fence`]: the holder's incarnation and the session's
//! generation, which a backend compares with what it has before it writes or deletes
//! anything, so that a node whose holding was taken over (it stalled, or was cut off) changes
//! nothing any more. A node holds its sessions only while its [`Lease`] is good; one whose
//! lease lapsed comes back as a new incarnation and claims its sessions again
//! ([`Cluster::reclaim`]), unless another node took them over meanwhile
//! ([`Cluster::take_over`], a compare-and-swap).
//!
//! The requests of a session that reach another node go to the holder over HTTP/2, each node
//! listening for its peers on the [`listener`](Cluster::listener) whose address its
//! membership record advertises ([`Cluster::member`]).

pub(crate) mod lease;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::core::cluster::lease::Lease;
use crate::core::store::event_store::{EventStore, StoreError, StoreFuture};
pub use crate::core::store::fence::{Fence, NotHolder};
use crate::core::store::session_store::{SessionRecord, SessionStore};

/// Who holds a session, as the shared records say.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// The holder, as its [`Cluster::node`] names it.
    pub node: String,
    /// Its holding.
    pub fence: Fence,
}

impl Holder {
    /// `node`, holding under `fence`.
    pub fn new(node: impl Into<String>, fence: Fence) -> Self {
        Holder {
            node: node.into(),
            fence,
        }
    }
}

/// What the shared records say of a session ([`Cluster::locate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// No record: the session never existed, or it ended.
    Unknown,
    /// Held by a node.
    Held(Holder),
    /// Recorded but held by no node: its holder handed it over (it shut down). The next node
    /// to [`take_over`](Cluster::take_over) it does so at once, as holder `generation + 1`.
    Free {
        /// The generation of its last holder.
        generation: u64,
    },
}

/// A node, as the membership records say ([`Cluster::member`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Member {
    /// Its incarnation now: a holding of an earlier one is no longer held.
    pub incarnation: u64,
    /// Where it listens for requests forwarded by its peers.
    pub address: SocketAddr,
    /// Until when its lease is sure to be good, by this process's clock: before then, nobody
    /// takes its sessions over; after, [`Cluster::take_over`] asks the records afresh.
    pub until: Instant,
}

impl Member {
    /// A member of `incarnation`, listening at `address`, alive until `until`.
    pub fn new(incarnation: u64, address: SocketAddr, until: Instant) -> Self {
        Member {
            incarnation,
            address,
            until,
        }
    }
}

/// What [`Cluster::take_over`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TakeOver {
    /// This node holds the session now, under this fence: it must start the application
    /// again.
    Taken(Fence),
    /// The holder is alive after all (its lease was renewed): forward to it.
    Alive(Member),
    /// The records changed since they were read (another node took the session over first, or
    /// it ended): look it up again.
    Moved,
    /// Nobody may take a session over yet: the shared records just came back (restarted,
    /// failed over, or out of reach for a while), and live holders get one lease period to
    /// renew first. Ask again after this long.
    Wait(Duration),
}

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

/// The nodes serving one set of sessions, as one of them sees them: the shared stores, who
/// holds which session, the node's own lease, and where its peers listen.
///
/// Give it to [`Config::cluster`](crate::Config::cluster), which takes its
/// [`event_store`](Cluster::event_store) and [`session_store`](Cluster::session_store) too.
/// The service [`start`](Cluster::start)s each new session here, [`locate`](Cluster::locate)s
/// one a request names when it does not hold it, forwards the request to the holder's
/// [`member`](Cluster::member) address, [`take_over`](Cluster::take_over)s one whose holder's
/// lease lapsed, [`reclaim`](Cluster::reclaim)s its own after its lease lapsed and came back,
/// and [`end`](Cluster::end)s or [`hand_over`](Cluster::hand_over)s those it held. It serves
/// its peers' requests on the [`listener`](Cluster::listener), signed with the
/// [`secret`](Cluster::secret) they share.
pub trait Cluster: Send + Sync + 'static {
    /// This node's name, unique among the nodes.
    fn node(&self) -> &str;

    /// This node's lease, which the cluster renews.
    fn lease(&self) -> &Lease;

    /// The event store every node shares.
    fn event_store(&self) -> Arc<dyn EventStore>;

    /// The session store every node shares.
    fn session_store(&self) -> Arc<dyn SessionStore>;

    /// A session starts on this node: its record, held by this node's incarnation as
    /// generation 0, in one step. The fence to write it with.
    fn start<'a>(&'a self, record: &'a SessionRecord)
    -> StoreFuture<'a, Result<Fence, StoreError>>;

    /// What the records say of `session`.
    fn locate<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<Location, StoreError>>;

    /// Takes `session` over from what `from` (as [`locate`](Cluster::locate) read it) says,
    /// if its holder's lease lapsed (or it is [`Free`](Location::Free)): a compare-and-swap,
    /// which no two nodes win for one generation.
    fn take_over<'a>(
        &'a self,
        session: &'a str,
        from: &'a Location,
    ) -> StoreFuture<'a, Result<TakeOver, StoreError>>;

    /// Claims `session`, held by this node under `fence` (of an earlier incarnation), for its
    /// incarnation now, keeping its generation: `Some` with the new fence if nobody took it over
    /// meanwhile, `None` if someone did (or it ended).
    fn reclaim<'a>(
        &'a self,
        session: &'a str,
        fence: Fence,
    ) -> StoreFuture<'a, Result<Option<Fence>, StoreError>>;

    /// A session held under `fence` ended: its record, its holder and its events go. Nothing
    /// goes if the fence is not the session's holding any more.
    fn end<'a>(&'a self, session: &'a str, fence: Fence) -> StoreFuture<'a, ()>;

    /// This node lets go of a session it holds under `fence` that goes on (it shuts down): the
    /// record and events stay, the session is [`Free`](Location::Free), and the next node to
    /// need it takes it over at once.
    fn hand_over<'a>(&'a self, session: &'a str, fence: Fence) -> StoreFuture<'a, ()>;

    /// Node `node` as this node last read the membership records, if it is a member.
    fn member(&self, node: &str) -> Option<Member>;

    /// Where this node listens for its peers' forwarded requests. The service takes it once,
    /// when it is built within a tokio runtime (else at its first request), and serves HTTP/2
    /// there; later calls return `None`.
    fn listener(&self) -> Option<std::net::TcpListener>;

    /// The key with which the nodes sign the requests they forward to each other.
    fn secret(&self) -> &[u8];
}
