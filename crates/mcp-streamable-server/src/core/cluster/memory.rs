//! Nodes in one process: the reference for the [`Cluster`] contract, and what tests of several
//! nodes run on without a shared backend.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::{Change, Cluster, Forwarded, Location, Watch};
use crate::core::event_store::{StoreError, StoreFuture};

/// How many envelopes wait for a node's service before a forward to it fails.
const INBOX: usize = 256;

/// How long a forward waits for its answer.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(10);

/// Nodes sharing one set of sessions inside one process: each [`node`](Self::node) is the
/// [`Cluster`] of one service. It shares nothing with other processes; it is the reference for
/// the contract, and lets tests run several nodes, and kill one, without a backend.
///
/// ```
/// use mcp_streamable_server::{Config, InMemoryEventStore, InMemoryNetwork, InMemorySessionStore};
///
/// let network = InMemoryNetwork::default();
/// let (events, records) = (InMemoryEventStore::default(), InMemorySessionStore::default());
/// let node = |name: &str| {
///     Config::default()
///         .event_store(events.clone())
///         .session_store(records.clone())
///         .cluster(network.node(name))
/// };
/// let (a, b) = (node("a"), node("b"));
/// # let _ = (a, b);
/// ```
#[derive(Clone, Default)]
pub struct InMemoryNetwork {
    inner: Arc<Mutex<Net>>,
}

#[derive(Default)]
struct Net {
    nodes: HashMap<String, Node>,
    /// Each held session: its holder (none once handed over) and the holder's number.
    holders: HashMap<String, (Option<String>, u64)>,
    /// Each watched session's watches: the holder each names, and its channel.
    watches: HashMap<String, Vec<(String, mpsc::Sender<Change>)>>,
}

struct Node {
    alive: bool,
    inbox: mpsc::Sender<Forwarded>,
}

impl fmt::Debug for InMemoryNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let net = self.lock();
        f.debug_struct("InMemoryNetwork")
            .field("nodes", &net.nodes.len())
            .field("held", &net.holders.len())
            .finish()
    }
}

impl InMemoryNetwork {
    fn lock(&self) -> MutexGuard<'_, Net> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new node named `name`, alive.
    ///
    /// # Panics
    /// If a node of that name exists.
    pub fn node(&self, name: &str) -> InMemoryCluster {
        let (tx, rx) = mpsc::channel(INBOX);
        let mut net = self.lock();
        assert!(
            !net.nodes.contains_key(name),
            "a node named {name:?} exists"
        );
        net.nodes.insert(
            name.to_owned(),
            Node {
                alive: true,
                inbox: tx,
            },
        );
        InMemoryCluster {
            network: self.clone(),
            name: name.to_owned(),
            inbox: Mutex::new(Some(rx)),
        }
    }

    /// Node `name` dies, as a process killed: its leases lapse at once, forwards to it fail,
    /// and watches naming it as holder learn it.
    pub fn kill(&self, name: &str) {
        let mut net = self.lock();
        if let Some(node) = net.nodes.get_mut(name) {
            node.alive = false;
        }
        for watches in net.watches.values_mut() {
            watches.retain(|(holder, tx)| {
                if holder == name {
                    let _ = tx.try_send(Change::HolderLost);
                }
                !tx.is_closed()
            });
        }
    }

    /// The node holding `session`, if any.
    pub fn holder(&self, session: &str) -> Option<String> {
        self.lock()
            .holders
            .get(session)
            .and_then(|(node, _)| node.clone())
    }

    /// The number of sessions held.
    pub fn held(&self) -> usize {
        self.lock().holders.len()
    }
}

/// One node of an [`InMemoryNetwork`].
pub struct InMemoryCluster {
    network: InMemoryNetwork,
    name: String,
    inbox: Mutex<Option<mpsc::Receiver<Forwarded>>>,
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

impl InMemoryCluster {
    fn is_alive(&self) -> bool {
        let net = self.network.lock();
        net.nodes.get(&self.name).is_some_and(|n| n.alive)
    }

    fn dead() -> StoreError {
        "this node is dead".into()
    }
}

impl Cluster for InMemoryCluster {
    fn node(&self) -> &str {
        &self.name
    }

    fn hold<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<(), StoreError>> {
        if !self.is_alive() {
            return ready(Err(Self::dead()));
        }
        let mut net = self.network.lock();
        net.holders
            .insert(session.to_owned(), (Some(self.name.clone()), 0));
        ready(Ok(()))
    }

    fn locate<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<Location, StoreError>> {
        if !self.is_alive() {
            return ready(Err(Self::dead()));
        }
        let mut guard = self.network.lock();
        let net = &mut *guard;
        let Some((holder, generation)) = net.holders.get_mut(session) else {
            return ready(Ok(Location::Unknown));
        };
        let alive = |node: &str| net.nodes.get(node).is_some_and(|n| n.alive);
        let location = match holder.as_deref() {
            Some(node) if node == self.name => Location::Here,
            Some(node) if alive(node) => Location::Elsewhere {
                node: node.to_owned(),
            },
            // Lapsed, or handed over.
            _ => {
                *holder = Some(self.name.clone());
                *generation += 1;
                Location::TakenOver {
                    generation: *generation,
                }
            }
        };
        ready(Ok(location))
    }

    fn release<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        let mut net = self.network.lock();
        if net
            .holders
            .get(session)
            .is_some_and(|(holder, _)| holder.as_deref() == Some(self.name.as_str()))
        {
            net.holders.remove(session);
        }
        ready(())
    }

    fn hand_over<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        let mut net = self.network.lock();
        if let Some((holder, _)) = net.holders.get_mut(session)
            && holder.as_deref() == Some(self.name.as_str())
        {
            *holder = None;
        }
        ready(())
    }

    fn forward<'a>(
        &'a self,
        node: &'a str,
        envelope: Bytes,
    ) -> StoreFuture<'a, Result<Bytes, StoreError>> {
        let inbox = {
            let net = self.network.lock();
            match net.nodes.get(node) {
                Some(n) if n.alive => Some(n.inbox.clone()),
                _ => None,
            }
        };
        Box::pin(async move {
            let inbox = inbox.ok_or_else(|| format!("node {node:?} is gone"))?;
            let (tx, rx) = oneshot::channel();
            inbox
                .try_send(Forwarded::new(envelope, tx))
                .map_err(|_| format!("node {node:?} is not taking envelopes"))?;
            match tokio::time::timeout(FORWARD_TIMEOUT, rx).await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(_)) => Err(format!("node {node:?} dropped the envelope").into()),
                Err(_) => Err(format!("node {node:?} did not answer in time").into()),
            }
        })
    }

    fn inbox(&self) -> Option<mpsc::Receiver<Forwarded>> {
        self.inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn written<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        let mut net = self.network.lock();
        if let Some(watches) = net.watches.get_mut(session) {
            watches.retain(|(_, tx)| {
                // Full: a change is pending already, and the watcher reads the store afresh.
                let _ = tx.try_send(Change::Written { stream });
                !tx.is_closed()
            });
        }
        ready(())
    }

    fn watch(&self, session: &str, holder: &str) -> Watch {
        let (tx, rx) = mpsc::channel(1);
        let mut net = self.network.lock();
        if !net.nodes.get(holder).is_some_and(|n| n.alive) {
            let _ = tx.try_send(Change::HolderLost);
        }
        let watches = net.watches.entry(session.to_owned()).or_default();
        watches.retain(|(_, tx)| !tx.is_closed());
        watches.push((holder.to_owned(), tx));
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lapsed_holder_is_taken_over_once() {
        let network = InMemoryNetwork::default();
        let (a, b, c) = (network.node("a"), network.node("b"), network.node("c"));
        assert_eq!(b.locate("s").await.unwrap(), Location::Unknown);
        a.hold("s").await.unwrap();
        assert_eq!(a.locate("s").await.unwrap(), Location::Here);
        let elsewhere = Location::Elsewhere { node: "a".into() };
        assert_eq!(b.locate("s").await.unwrap(), elsewhere);
        let mut watch = b.watch("s", "a");
        network.kill("a");
        assert_eq!(watch.recv().await, Some(Change::HolderLost));
        assert_eq!(
            b.locate("s").await.unwrap(),
            Location::TakenOver { generation: 1 }
        );
        // The race is decided: the next node finds b holding it.
        let elsewhere = Location::Elsewhere { node: "b".into() };
        assert_eq!(c.locate("s").await.unwrap(), elsewhere);
        assert!(a.locate("s").await.is_err(), "a dead node locates nothing");
        b.release("s").await;
        assert_eq!(c.locate("s").await.unwrap(), Location::Unknown);
    }

    #[tokio::test]
    async fn forwards_are_answered_and_fail_on_dead_nodes() {
        let network = InMemoryNetwork::default();
        let (a, b) = (network.node("a"), network.node("b"));
        let mut inbox = b.inbox().unwrap();
        assert!(b.inbox().is_none(), "the inbox is taken once");
        let answering = tokio::spawn(async move {
            let forwarded = inbox.recv().await.unwrap();
            assert_eq!(&forwarded.envelope[..], b"ping");
            forwarded.reply.send(Bytes::from_static(b"pong")).unwrap();
        });
        let answer = a.forward("b", Bytes::from_static(b"ping")).await.unwrap();
        assert_eq!(&answer[..], b"pong");
        answering.await.unwrap();
        network.kill("b");
        assert!(a.forward("b", Bytes::new()).await.is_err());
        assert!(a.forward("nobody", Bytes::new()).await.is_err());
    }

    #[tokio::test]
    async fn watches_hear_of_writes_coalesced() {
        let network = InMemoryNetwork::default();
        let a = network.node("a");
        let mut watch = a.watch("s", "a");
        a.written("s", 3).await;
        a.written("s", 4).await;
        a.written("other", 5).await;
        assert_eq!(watch.recv().await, Some(Change::Written { stream: 3 }));
        assert!(watch.try_recv().is_err(), "a full watch coalesces changes");
        drop(watch);
        a.written("s", 6).await;
        assert!(network.lock().watches["s"].is_empty());
    }
}
