//! Nodes in one process: the reference for the [`Cluster`] contract, and what tests of several
//! nodes run on without a shared backend. Its stores check fences as a shared store must.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use mcp_jsonrpc::Id;

use crate::core::cluster::lease::Lease;
use crate::core::cluster::{Cluster, Fence, Holder, Location, Member, NotHolder, TakeOver};
use crate::core::store::event_store::{
    Begun, EventStore, InMemoryEventStore, ReplayError, StoreError, StoreFuture, StoredEvent,
    Unfinished, Write,
};
use crate::core::store::session_store::{InMemorySessionStore, SessionRecord, SessionStore};
use crate::protocol::ProtocolVersion;

/// How long a live in-memory node's lease runs: as long as the node lives, in effect.
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// How far ahead the records vouch for a live member's lease. It lapses whenever a test says
/// ([`InMemoryNetwork::kill`], [`lapse`](InMemoryNetwork::lapse)), so they vouch for little: a
/// request that found a holder out of reach waits this long, not the lease's year, before it
/// looks again, and finds a killed holder dead.
const VOUCHED: Duration = Duration::from_millis(50);

/// Nodes sharing one set of sessions inside one process: each [`node`](Self::node) is the
/// [`Cluster`] of one service, listening for its peers on a loopback port. It shares nothing
/// with other processes; it is the reference for the contract, and lets tests run several
/// nodes, kill one, or make one's lease lapse, without a backend.
///
/// ```
/// use mcp_streamable_server::{Config, InMemoryNetwork};
///
/// let network = InMemoryNetwork::default();
/// let (a, b) = (Config::default().cluster(network.node("a")), Config::default().cluster(network.node("b")));
/// # let _ = (a, b);
/// ```
#[derive(Clone)]
pub struct InMemoryNetwork {
    inner: Arc<Mutex<Net>>,
    events: InMemoryEventStore,
    records: InMemorySessionStore,
}

impl Default for InMemoryNetwork {
    fn default() -> Self {
        InMemoryNetwork {
            inner: Arc::new(Mutex::new(Net {
                nodes: HashMap::new(),
                holders: HashMap::new(),
                secret: uuid::Uuid::new_v4().as_bytes().to_vec(),
            })),
            events: InMemoryEventStore::default(),
            records: InMemorySessionStore::default(),
        }
    }
}

struct Net {
    nodes: HashMap<String, Node>,
    /// Each session's holding (none once handed over) and the last generation handed out.
    holders: HashMap<String, (Option<Holder>, u64)>,
    secret: Vec<u8>,
}

struct Node {
    /// Its incarnation while its lease is good; `None` once it lapsed or the node died.
    incarnation: Option<u64>,
    address: SocketAddr,
    lease: Lease,
}

impl Net {
    /// Whether `node` holds `session` under `fence`.
    fn holds(&self, session: &str, node: &str, fence: Fence) -> bool {
        matches!(self.holders.get(session), Some((Some(h), _)) if h.node == node && h.fence == fence)
    }

    fn member(&self, node: &str) -> Option<Member> {
        let n = self.nodes.get(node)?;
        Some(Member::new(
            n.incarnation?,
            n.address,
            Instant::now() + VOUCHED,
        ))
    }
}

impl fmt::Debug for InMemoryNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let net = self.lock();
        f.debug_struct("InMemoryNetwork")
            .field("nodes", &net.nodes.len())
            .field("held", &net.holders.len())
            .finish_non_exhaustive()
    }
}

fn incarnation() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0 | 1
}

impl InMemoryNetwork {
    fn lock(&self) -> MutexGuard<'_, Net> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new node named `name`, alive, listening for its peers on a loopback port.
    ///
    /// # Panics
    /// If a node of that name exists, or no loopback port can be had.
    pub fn node(&self, name: &str) -> InMemoryCluster {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a loopback port");
        let address = listener.local_addr().expect("a bound address");
        let lease = Lease::new();
        let incarnation = incarnation();
        lease.renewed(incarnation, Instant::now(), FOREVER);
        let mut net = self.lock();
        assert!(
            !net.nodes.contains_key(name),
            "a node named {name:?} exists"
        );
        net.nodes.insert(
            name.to_owned(),
            Node {
                incarnation: Some(incarnation),
                address,
                lease: lease.clone(),
            },
        );
        let secret = net.secret.clone();
        drop(net);
        let stores = Stores {
            network: self.clone(),
            node: name.to_owned(),
        };
        InMemoryCluster {
            network: self.clone(),
            name: name.to_owned(),
            lease,
            listener: Mutex::new(Some(listener)),
            secret,
            event_store: Arc::new(stores.clone()),
            session_store: Arc::new(stores),
        }
    }

    /// Node `name` dies, as a process killed: its lease lapses at once, and its sessions go to
    /// the next node that needs them. Whatever it still runs is fenced off: it delivers nothing,
    /// and the stores refuse its writes.
    pub fn kill(&self, name: &str) {
        self.lapse(name);
    }

    /// Node `name`'s lease lapses, as when it was paused past its lease: it delivers nothing
    /// until [`renew`](Self::renew), and other nodes may take its sessions over meanwhile.
    pub fn lapse(&self, name: &str) {
        let mut net = self.lock();
        if let Some(node) = net.nodes.get_mut(name) {
            node.incarnation = None;
            node.lease.lapse();
        }
    }

    /// Node `name`, whose lease lapsed, comes back as a new incarnation: its service claims its
    /// sessions again, those nobody took over meanwhile.
    pub fn renew(&self, name: &str) {
        let mut net = self.lock();
        if let Some(node) = net.nodes.get_mut(name) {
            let incarnation = incarnation();
            node.incarnation = Some(incarnation);
            node.lease.renewed(incarnation, Instant::now(), FOREVER);
        }
    }

    /// The node holding `session`, if any.
    pub fn holder(&self, session: &str) -> Option<String> {
        let net = self.lock();
        let (holder, _) = net.holders.get(session)?;
        holder.as_ref().map(|h| h.node.clone())
    }

    /// The number of sessions recorded.
    pub fn held(&self) -> usize {
        self.lock().holders.len()
    }

    /// The shared event store, as a test looks at it.
    pub fn events(&self) -> &InMemoryEventStore {
        &self.events
    }

    /// The shared session store, as a test looks at it.
    pub fn records(&self) -> &InMemorySessionStore {
        &self.records
    }
}

/// One node of an [`InMemoryNetwork`].
pub struct InMemoryCluster {
    network: InMemoryNetwork,
    name: String,
    lease: Lease,
    listener: Mutex<Option<std::net::TcpListener>>,
    /// The network's, which never changes.
    secret: Vec<u8>,
    event_store: Arc<Stores>,
    session_store: Arc<Stores>,
}

impl fmt::Debug for InMemoryCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryCluster")
            .field("node", &self.name)
            .finish_non_exhaustive()
    }
}

fn ready<T: Send + 'static>(value: T) -> StoreFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

fn dead() -> StoreError {
    "this node's lease lapsed".into()
}

impl InMemoryCluster {
    /// This node's incarnation, if its lease is good.
    fn incarnation(&self, net: &Net) -> Option<u64> {
        net.nodes.get(&self.name)?.incarnation
    }
}

impl Cluster for InMemoryCluster {
    fn node(&self) -> &str {
        &self.name
    }

    fn lease(&self) -> &Lease {
        &self.lease
    }

    fn event_store(&self) -> Arc<dyn EventStore> {
        Arc::clone(&self.event_store) as Arc<dyn EventStore>
    }

    fn session_store(&self) -> Arc<dyn SessionStore> {
        Arc::clone(&self.session_store) as Arc<dyn SessionStore>
    }

    fn start<'a>(
        &'a self,
        record: &'a SessionRecord,
    ) -> StoreFuture<'a, Result<Fence, StoreError>> {
        let mut net = self.network.lock();
        let Some(incarnation) = self.incarnation(&net) else {
            return ready(Err(dead()));
        };
        let fence = Fence::new(incarnation, 0);
        let holder = Holder::new(&self.name, fence);
        net.holders.insert(record.id.clone(), (Some(holder), 0));
        drop(net);
        let created = self.network.records.create(record.clone());
        Box::pin(async move { created.await.map(|()| fence) })
    }

    fn locate<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<Location, StoreError>> {
        let net = self.network.lock();
        let location = match net.holders.get(session) {
            None => Location::Unknown,
            Some((Some(holder), _)) => Location::Held(holder.clone()),
            Some((None, generation)) => Location::Free {
                generation: *generation,
            },
        };
        ready(Ok(location))
    }

    fn take_over<'a>(
        &'a self,
        session: &'a str,
        from: &'a Location,
    ) -> StoreFuture<'a, Result<TakeOver, StoreError>> {
        let mut guard = self.network.lock();
        let net = &mut *guard;
        let Some(incarnation) = self.incarnation(net) else {
            return ready(Err(dead()));
        };
        let live = |holder: &Holder| {
            let mine = holder.node == self.name && holder.fence.incarnation == incarnation;
            net.member(&holder.node)
                .filter(|m| !mine && m.incarnation == holder.fence.incarnation)
        };
        let taken = match (net.holders.get(session), from) {
            (Some((Some(now), _)), Location::Held(read)) if now == read => match live(now) {
                Some(member) => return ready(Ok(TakeOver::Alive(member))),
                None => true,
            },
            (Some((None, generation)), Location::Free { generation: read }) => generation == read,
            _ => false,
        };
        if !taken {
            return ready(Ok(TakeOver::Moved));
        }
        let Some((holder, generation)) = net.holders.get_mut(session) else {
            return ready(Ok(TakeOver::Moved));
        };
        *generation += 1;
        let fence = Fence::new(incarnation, *generation);
        *holder = Some(Holder::new(&self.name, fence));
        ready(Ok(TakeOver::Taken(fence)))
    }

    fn reclaim<'a>(
        &'a self,
        session: &'a str,
        fence: Fence,
    ) -> StoreFuture<'a, Result<Option<Fence>, StoreError>> {
        let mut guard = self.network.lock();
        let net = &mut *guard;
        let Some(incarnation) = self.incarnation(net) else {
            return ready(Err(dead()));
        };
        if !net.holds(session, &self.name, fence) {
            return ready(Ok(None));
        }
        let renewed = Fence::new(incarnation, fence.generation);
        if let Some((holder, _)) = net.holders.get_mut(session) {
            *holder = Some(Holder::new(&self.name, renewed));
        }
        ready(Ok(Some(renewed)))
    }

    fn end<'a>(&'a self, session: &'a str, fence: Fence) -> StoreFuture<'a, ()> {
        let mut net = self.network.lock();
        if !net.holds(session, &self.name, fence) {
            return ready(());
        }
        net.holders.remove(session);
        drop(net);
        let (records, events) = (
            self.network.records.remove(session),
            self.network.events.close(session),
        );
        Box::pin(async move {
            records.await;
            events.await;
        })
    }

    fn hand_over<'a>(&'a self, session: &'a str, fence: Fence) -> StoreFuture<'a, ()> {
        let mut net = self.network.lock();
        if net.holds(session, &self.name, fence)
            && let Some((holder, _)) = net.holders.get_mut(session)
        {
            *holder = None;
        }
        ready(())
    }

    fn member(&self, node: &str) -> Option<Member> {
        self.network.lock().member(node)
    }

    fn listener(&self) -> Option<std::net::TcpListener> {
        self.listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn secret(&self) -> &[u8] {
        &self.secret
    }
}

/// A node's view of the network's stores: writes fenced by the network's holders.
#[derive(Clone)]
struct Stores {
    network: InMemoryNetwork,
    node: String,
}

impl Stores {
    /// `Ok` when there is no fence, or it is `session`'s holding by this node.
    fn check(&self, session: &str, fence: Option<Fence>) -> Result<(), StoreError> {
        match fence {
            Some(fence) if !self.network.lock().holds(session, &self.node, fence) => {
                Err(NotHolder.into())
            }
            _ => Ok(()),
        }
    }
}

impl EventStore for Stores {
    fn write<'a>(
        &'a self,
        session: &'a str,
        fence: Option<Fence>,
        writes: &'a [Write],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        if let Err(err) = self.check(session, fence) {
            return ready(Err(err));
        }
        self.network.events.write(session, fence, writes)
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, ReplayError>> {
        self.network.events.replay_after(session, stream, after)
    }

    fn begin<'a>(
        &'a self,
        session: &'a str,
        fence: Fence,
        stream: u64,
        requests: &'a [Id],
        forward: Option<&'a str>,
    ) -> StoreFuture<'a, Result<Begun, StoreError>> {
        if let Err(err) = self.check(session, Some(fence)) {
            return ready(Err(err));
        }
        self.network
            .events
            .begin(session, fence, stream, requests, forward)
    }

    fn unfinished<'a>(
        &'a self,
        session: &'a str,
    ) -> StoreFuture<'a, Result<Vec<Unfinished>, StoreError>> {
        self.network.events.unfinished(session)
    }

    fn close<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.network.events.close(session)
    }
}

impl SessionStore for Stores {
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        self.network.records.create(record)
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        self.network.records.load(id)
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        if let Err(err) = self.check(id, fence) {
            return ready(Err(err));
        }
        self.network.records.touch(id, fence, at)
    }

    fn set_version<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        version: ProtocolVersion,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        if let Err(err) = self.check(id, fence) {
            return ready(Err(err));
        }
        self.network.records.set_version(id, fence, version)
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.network.records.remove(id)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn record(id: &str) -> SessionRecord {
        SessionRecord::new(id, Bytes::from_static(b"{}"), None)
    }

    #[tokio::test]
    async fn a_lapsed_holder_is_taken_over_once_and_its_writes_refused() {
        let network = InMemoryNetwork::default();
        let (a, b, c) = (network.node("a"), network.node("b"), network.node("c"));
        assert_eq!(b.locate("s").await.unwrap(), Location::Unknown);
        let fence = a.start(&record("s")).await.unwrap();
        let held = b.locate("s").await.unwrap();
        let Location::Held(holder) = &held else {
            panic!("{held:?}")
        };
        assert_eq!((holder.node.as_str(), holder.fence), ("a", fence));
        // Alive: nobody takes it over.
        assert!(matches!(
            b.take_over("s", &held).await.unwrap(),
            TakeOver::Alive(_)
        ));
        network.lapse("a");
        let taken = b.take_over("s", &held).await.unwrap();
        let TakeOver::Taken(fence_b) = taken else {
            panic!("{taken:?}")
        };
        assert_eq!(fence_b.generation, 1);
        // The race is decided: the next node finds the records moved on.
        assert_eq!(c.take_over("s", &held).await.unwrap(), TakeOver::Moved);
        // a, back as a new incarnation, claims nothing, and its writes and deletes are refused.
        network.renew("a");
        assert_eq!(a.reclaim("s", fence).await.unwrap(), None);
        let write = [Write::Finish { stream: 1 }];
        let refused = a.event_store().write("s", Some(fence), &write).await;
        assert!(refused.unwrap_err().downcast_ref::<NotHolder>().is_some());
        a.end("s", fence).await;
        assert_eq!(network.holder("s").as_deref(), Some("b"));
        b.end("s", fence_b).await;
        assert_eq!(c.locate("s").await.unwrap(), Location::Unknown);
    }

    #[tokio::test]
    async fn a_node_back_from_a_lapse_reclaims_what_nobody_took() {
        let network = InMemoryNetwork::default();
        let a = network.node("a");
        let fence = a.start(&record("s")).await.unwrap();
        network.lapse("a");
        assert!(!a.lease().holds(fence));
        assert!(a.reclaim("s", fence).await.is_err(), "not while lapsed");
        network.renew("a");
        let renewed = a.reclaim("s", fence).await.unwrap().unwrap();
        assert_eq!(renewed.generation, fence.generation);
        assert_ne!(renewed.incarnation, fence.incarnation);
        assert!(a.lease().holds(renewed));
        a.hand_over("s", renewed).await;
        assert_eq!(
            a.locate("s").await.unwrap(),
            Location::Free { generation: 0 }
        );
    }
}
