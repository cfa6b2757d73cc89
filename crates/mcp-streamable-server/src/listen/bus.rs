//! The seam between nodes: a change announced on one node reaches the listen streams of every
//! node through a [`NotificationBus`]. [`InMemoryBus`] serves one process; the Redis crate
//! has one for several.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use tokio::sync::{broadcast, mpsc};

use crate::listen::change::Change;

/// What [`NotificationBus::publish`] returns.
pub type BusFuture<'a> = Pin<Box<dyn Future<Output = Result<(), BusError>> + Send + 'a>>;

/// How many changes a subscriber of the bus may fall behind by before it is told it missed
/// some.
pub const BUS_CAPACITY: usize = 1024;

/// What a subscriber of the bus hears.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Heard {
    /// A change announced on some node.
    Change(Change),
    /// Changes may have been missed (the subscriber fell behind, or the bus reconnected):
    /// every listen stream is told of every type it listens to, which is never wrong, since
    /// each notification only says "look again".
    Gap,
}

/// A change could not be announced.
#[derive(Debug)]
pub struct BusError(Box<dyn std::error::Error + Send + Sync>);

impl BusError {
    /// An error of the bus's own.
    pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> BusError {
        BusError(source.into())
    }
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a change could not be announced: {}", self.0)
    }
}

impl std::error::Error for BusError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// Carries the changes announced on any node to the listen streams of every node.
///
/// A node subscribes once ([`Subscriptions`](crate::Subscriptions) does, for all its streams)
/// and publishes each change it announces. Delivery is at most once; a subscriber that may
/// have missed changes hears [`Heard::Gap`], after which its streams are told of everything
/// they listen to.
pub trait NotificationBus: Send + Sync + 'static {
    /// Announces `change` to every subscriber, on every node, this one's included.
    fn publish(&self, change: &Change) -> BusFuture<'_>;

    /// The changes announced from now on, as they come, until the receiver is dropped: first
    /// [`Heard::Gap`], once the subscription is in place (a listen stream is acknowledged only
    /// then, so that it hears every change announced after), then the changes, and a
    /// [`Heard::Gap`] again wherever some may have been missed. Called within a tokio runtime.
    fn subscribe(&self) -> mpsc::Receiver<Heard>;
}

/// The bus of one process: every [`Subscriptions`](crate::Subscriptions) built on a clone of
/// it hears what any of them announces.
#[derive(Clone)]
pub struct InMemoryBus {
    sender: broadcast::Sender<Change>,
}

impl Default for InMemoryBus {
    fn default() -> InMemoryBus {
        InMemoryBus {
            sender: broadcast::channel(BUS_CAPACITY).0,
        }
    }
}

impl fmt::Debug for InMemoryBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryBus")
            .field("subscribers", &self.sender.receiver_count())
            .finish()
    }
}

impl NotificationBus for InMemoryBus {
    fn publish(&self, change: &Change) -> BusFuture<'_> {
        // No subscriber is no error: nobody listens.
        let _ = self.sender.send(change.clone());
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self) -> mpsc::Receiver<Heard> {
        let mut changes = self.sender.subscribe();
        let (tx, rx) = mpsc::channel(BUS_CAPACITY);
        tokio::spawn(async move {
            // Subscribed already: the receiver above hears every change sent from now on.
            if tx.send(Heard::Gap).await.is_err() {
                return;
            }
            loop {
                let heard = match changes.recv().await {
                    Ok(change) => Heard::Change(change),
                    Err(broadcast::error::RecvError::Lagged(_)) => Heard::Gap,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                if tx.send(heard).await.is_err() {
                    return;
                }
            }
        });
        rx
    }
}
