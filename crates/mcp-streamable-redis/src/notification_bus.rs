//! The nodes' notification bus: a change one node announces is published on one Redis channel
//! (sharded pub/sub on a Redis Cluster, so that it stays on the shard that owns the channel)
//! and heard by every node's one subscription.

use std::sync::Arc;
use std::time::Duration;

use mcp_streamable_server::{BUS_CAPACITY, BusError, BusFuture, Change, Heard, NotificationBus};
use redis::{Msg, PushInfo, PushKind};
use tokio::sync::mpsc;

use crate::connection::Target;
use crate::lease::Keeper;
use crate::node::Node;

/// How long a node waits before it tries to subscribe again after a failure.
const RETRY: Duration = Duration::from_millis(500);

/// The [`NotificationBus`] of the nodes of one [`RedisBackend`](crate::RedisBackend): give it
/// to each node's [`Subscriptions`](mcp_streamable_server::Subscriptions), and a change
/// announced on any node reaches the listen streams of every node.
///
/// Each node holds one subscription, whatever its number of streams; it reconnects and
/// subscribes again by itself after Redis restarts or a connection is cut, and its streams are
/// then told of everything they listen to (changes published while it was away are not
/// replayed: Redis pub/sub keeps nothing).
#[derive(Clone)]
pub struct RedisNotificationBus {
    node: Arc<Node>,
    _keeper: Arc<Keeper>,
}

impl std::fmt::Debug for RedisNotificationBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisNotificationBus")
            .field("channel", &self.node.keys.changes())
            .finish()
    }
}

impl RedisNotificationBus {
    pub(crate) fn new(node: Arc<Node>, keeper: Arc<Keeper>) -> RedisNotificationBus {
        RedisNotificationBus {
            node,
            _keeper: keeper,
        }
    }
}

impl NotificationBus for RedisNotificationBus {
    fn publish(&self, change: &Change) -> BusFuture<'_> {
        let command = match self.node.target {
            Target::Single(_) => "PUBLISH",
            Target::Cluster(..) => "SPUBLISH",
        };
        let mut cmd = redis::cmd(command);
        cmd.arg(self.node.keys.changes()).arg(change.to_wire());
        Box::pin(async move {
            let timeout = self.node.options.command_timeout;
            let _receivers: i64 = self
                .node
                .conn
                .query(&cmd, timeout)
                .await
                .map_err(BusError::new)?;
            Ok(())
        })
    }

    fn subscribe(&self) -> mpsc::Receiver<Heard> {
        let (tx, rx) = mpsc::channel(BUS_CAPACITY);
        tokio::spawn(listen(Arc::clone(&self.node), tx));
        rx
    }
}

/// Subscribes (again and again until it holds), then passes on what the channel carries until
/// `tx`'s receiver is gone.
async fn listen(node: Arc<Node>, tx: mpsc::Sender<Heard>) {
    let channel = node.keys.changes();
    let (pushes_tx, mut pushes) = mpsc::unbounded_channel();
    let timeout = node.options.command_timeout;
    let _subscriber = loop {
        match node
            .target
            .subscriber(&channel, pushes_tx.clone(), timeout)
            .await
        {
            Ok(subscriber) => break subscriber,
            Err(error) => {
                tracing::warn!(%error, "the notification bus could not subscribe; trying again");
                tokio::select! {
                    () = tx.closed() => return,
                    () = tokio::time::sleep(RETRY) => {}
                }
            }
        }
    };
    loop {
        let push = tokio::select! {
            () = tx.closed() => return,
            push = pushes.recv() => push,
        };
        let Some(push) = push else { return };
        let Some(heard) = heard(&channel, push) else {
            continue;
        };
        if tx.send(heard).await.is_err() {
            return;
        }
    }
}

/// What a push from Redis means to the listen streams: a subscription (the first, or one made
/// again after a reconnection, with whatever was published in between lost) and a lost
/// connection are a gap; a message is a change.
fn heard(channel: &str, push: PushInfo) -> Option<Heard> {
    match push.kind {
        PushKind::Subscribe | PushKind::SSubscribe | PushKind::Disconnection => Some(Heard::Gap),
        PushKind::Message | PushKind::SMessage => {
            let message = Msg::from_push_info(push)?;
            if message.get_channel_name() != channel {
                return None;
            }
            let change = Change::from_wire(message.get_payload_bytes());
            if change.is_none() {
                tracing::debug!("a change this node cannot read was ignored");
            }
            change.map(Heard::Change)
        }
        _ => None,
    }
}
