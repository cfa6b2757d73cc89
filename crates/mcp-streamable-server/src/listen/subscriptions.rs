//! One node's listen streams: each fed from one subscription to the bus, filtered, tagged,
//! and ended gracefully when the node closes them.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_jsonrpc::{ErrorObject, Id, Message, Notification, Request, Response, code};
use mcp_transport::{Connection, Outgoing, Sender};
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

use crate::listen::bus::{BUS_CAPACITY, BusError, Heard, NotificationBus};
use crate::listen::change::Change;
use crate::listen::filter::{SubscriptionFilter, Supported};
use crate::protocol::meta;

/// The method of the request that opens a listen stream.
pub const LISTEN_METHOD: &str = "subscriptions/listen";

/// The notification that acknowledges a listen stream, first on it.
pub const ACKNOWLEDGED_METHOD: &str = "notifications/subscriptions/acknowledged";

/// How long a listen request waits for the bus to be subscribed before it is refused.
const READY_WAIT: Duration = Duration::from_secs(5);

/// The listen streams (`subscriptions/listen`, 2026-07-28) of one node, and the changes it
/// announces to the listen streams of every node.
///
/// Build one per node on a [`NotificationBus`] ([`InMemoryBus`](crate::InMemoryBus) for one
/// process, the Redis crate's for several) and share it (clones share one). The application
/// hands it each `subscriptions/listen` request with its connection
/// ([`serve`](Subscriptions::serve)) and announces its changes
/// ([`announce`](Subscriptions::announce)): every open listen stream on every node whose
/// filter admits the change is told, tagged with its subscription id.
///
/// ```no_run
/// use mcp_streamable_server::{Change, InMemoryBus, ServerConnection, Subscriptions};
/// use mcp_transport::Connection;
///
/// async fn per_request(mut conn: ServerConnection, subscriptions: Subscriptions) {
///     let Ok(Some(mcp_jsonrpc::Message::Request(request))) = conn.recv().await else {
///         return;
///     };
///     if request.method == "subscriptions/listen" {
///         subscriptions.serve(&mut conn, &request).await;
///         return;
///     }
///     // ... a tool that changes the tool list:
///     let _ = subscriptions.announce(Change::ToolsListChanged).await;
/// }
/// # let _ = Subscriptions::new(InMemoryBus::default());
/// ```
#[derive(Clone)]
pub struct Subscriptions {
    inner: Arc<Inner>,
    supported: Supported,
}

struct Inner {
    bus: Box<dyn NotificationBus>,
    /// What the bus hears, for every stream of this node.
    local: broadcast::Sender<Heard>,
    /// Whether the bus is subscribed, so that a stream acknowledged hears what comes next.
    ready: watch::Sender<bool>,
    /// Set once to end every stream gracefully.
    closing: watch::Sender<bool>,
    pump: OnceLock<()>,
}

impl fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriptions")
            .field("listening", &self.listening())
            .field("supported", &self.supported)
            .finish()
    }
}

impl Subscriptions {
    /// One node's listen streams, on `bus`; every notification type supported.
    pub fn new(bus: impl NotificationBus) -> Subscriptions {
        Subscriptions {
            inner: Arc::new(Inner {
                bus: Box::new(bus),
                local: broadcast::channel(BUS_CAPACITY).0,
                ready: watch::channel(false).0,
                closing: watch::channel(false).0,
                pump: OnceLock::new(),
            }),
            supported: Supported::default(),
        }
    }

    /// The notification types this server's streams carry; one asked for and not supported
    /// is left out of the acknowledgement.
    pub fn supporting(mut self, supported: Supported) -> Subscriptions {
        self.supported = supported;
        self
    }

    /// Announces `change` to every listen stream on every node.
    pub async fn announce(&self, change: Change) -> Result<(), BusError> {
        self.inner.bus.publish(&change).await
    }

    /// The listen streams open on this node.
    pub fn listening(&self) -> usize {
        self.inner.local.receiver_count()
    }

    /// Ends every listen stream of this node gracefully, each with its result (a shutting-down
    /// server does this first); listen requests that come after are refused.
    pub fn close(&self) {
        self.inner.closing.send_replace(true);
    }

    /// Serves the listen stream `request` opens on `conn`, until the client closes it
    /// (cancelling the request), the connection ends, or [`close`](Subscriptions::close):
    /// the acknowledgement first, with the types agreed, then each change the filter admits.
    /// A filter naming an unknown type, or a node that cannot hear the bus, is answered with
    /// a JSON-RPC error instead.
    pub async fn serve<C: Connection>(&self, conn: &mut C, request: &Request) {
        let sender = conn.sender();
        let id = request.id.clone();
        let params: Option<Value> = request
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        let asked = match SubscriptionFilter::from_params(params.as_ref()) {
            Ok(asked) => asked,
            Err(why) => return refuse(&sender, id, code::INVALID_PARAMS, why.to_string()).await,
        };
        let closing = *self.inner.closing.borrow();
        if closing {
            let why = "the server is shutting down: no new listen streams";
            return refuse(&sender, id, code::INTERNAL_ERROR, why.to_owned()).await;
        }
        let mut heard = self.inner.local.subscribe();
        if !self.ready().await {
            let why = "notifications cannot be heard now: the notification bus is not subscribed";
            return refuse(&sender, id, code::INTERNAL_ERROR, why.to_owned()).await;
        }
        let filter = asked.agreed(&self.supported);
        if send(&sender, &id, acknowledgement(&id, &filter))
            .await
            .is_err()
        {
            return;
        }
        let stream = Stream { sender, id, filter };
        let mut closing = self.inner.closing.subscribe();
        loop {
            tokio::select! {
                () = closed(&mut closing) => return stream.complete().await,
                message = conn.recv() => match message {
                    Ok(Some(Message::Notification(n))) if cancels(&n, &stream.id) => return,
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => return,
                },
                heard = heard.recv() => {
                    let told = match heard {
                        Ok(Heard::Change(change)) => stream.tell(&[change]).await,
                        Ok(Heard::Gap) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            stream.tell(&stream.filter.everything()).await
                        }
                        Err(broadcast::error::RecvError::Closed) => return stream.complete().await,
                    };
                    if told.is_err() {
                        return;
                    }
                }
            }
        }
    }

    /// Starts hearing the bus, once, and waits a bounded time for its subscription.
    async fn ready(&self) -> bool {
        self.inner.pump.get_or_init(|| {
            let mut from_bus = self.inner.bus.subscribe();
            let inner = Arc::downgrade(&self.inner);
            tokio::spawn(async move {
                // The bus's first word says it is subscribed; nothing came before it.
                let mut first = true;
                while let Some(heard) = from_bus.recv().await {
                    let Some(inner) = inner.upgrade() else { return };
                    if std::mem::take(&mut first) {
                        inner.ready.send_replace(true);
                        if heard == Heard::Gap {
                            continue;
                        }
                    }
                    let _ = inner.local.send(heard);
                }
                if let Some(inner) = inner.upgrade() {
                    inner.ready.send_replace(false);
                }
            });
        });
        let mut ready = self.inner.ready.subscribe();
        let subscribed = async { ready.wait_for(|ready| *ready).await.is_ok() };
        tokio::time::timeout(READY_WAIT, subscribed)
            .await
            .unwrap_or(false)
    }
}

/// One open listen stream.
struct Stream<S> {
    sender: S,
    id: Id,
    filter: SubscriptionFilter,
}

impl<S: Sender> Stream<S> {
    /// Tells the stream of each of `changes` its filter admits.
    async fn tell(&self, changes: &[Change]) -> Result<(), mcp_transport::Error> {
        for change in changes.iter().filter(|c| self.filter.admits(c)) {
            send(&self.sender, &self.id, change.notification(&self.id)).await?;
        }
        Ok(())
    }

    /// Ends the stream gracefully: the listen request's result.
    async fn complete(&self) {
        let result = json!({"resultType": "complete", "_meta": {meta::SUBSCRIPTION_ID: &self.id}});
        if let Ok(raw) = mcp_jsonrpc::to_raw_value(&result) {
            let response = Message::Response(Response::success(self.id.clone(), raw));
            let _ = send(&self.sender, &self.id, response).await;
        }
    }
}

/// Resolves once the node closes its streams (never, if it is dropped first).
async fn closed(closing: &mut watch::Receiver<bool>) {
    if closing.wait_for(|closing| *closing).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn acknowledgement(id: &Id, filter: &SubscriptionFilter) -> Message {
    let params = json!({"_meta": {meta::SUBSCRIPTION_ID: id}, "notifications": filter.to_json()});
    let params = mcp_jsonrpc::to_raw_value(&params).ok();
    Message::Notification(Notification::new(ACKNOWLEDGED_METHOD, params))
}

/// Whether `notification` cancels the listen request `id`.
fn cancels(notification: &Notification, id: &Id) -> bool {
    #[derive(serde::Deserialize)]
    struct Cancelled {
        #[serde(rename = "requestId")]
        request_id: Id,
    }
    notification.method == "notifications/cancelled"
        && notification
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str::<Cancelled>(raw.get()).ok())
            .is_some_and(|c| &c.request_id == id)
}

async fn send<S: Sender>(
    sender: &S,
    id: &Id,
    message: Message,
) -> Result<(), mcp_transport::Error> {
    sender
        .send(Outgoing::new(message).related_to(id.clone()))
        .await
}

async fn refuse<S: Sender>(sender: &S, id: Id, code: i64, why: String) {
    let response = Response::error(Some(id.clone()), ErrorObject::new(code, why));
    let _ = send(sender, &id, Message::Response(response)).await;
}
