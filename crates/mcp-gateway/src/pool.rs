//! The warm children serving per-request (2026-07-28) clients: each started and initialized
//! once by the gateway, then shared by any number of requests at once (the link keeps their
//! ids apart). A pool child that dies fails the requests waiting on it; the next request
//! that picks its slot starts a new one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_jsonrpc::{ErrorObject, Message, Notification, Request, Response, code, to_raw_value};
use mcp_streamable_server::ProtocolVersion;
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};

use crate::error::Error;
use crate::link::Link;
use crate::start::Starter;

/// The version a pool child is initialized with: the newest of the session family, which
/// every stdio server speaks (stdio has no per-request revision). A child that knows only an
/// older one answers with it, as `initialize` negotiates, and is used all the same.
pub(crate) const CHILD_VERSION: ProtocolVersion = ProtocolVersion::LATEST_SESSION;

/// A child ready for requests: its link and its answer to `initialize`.
#[derive(Clone)]
pub(crate) struct Warm {
    pub(crate) link: Link,
    pub(crate) initialized: Arc<Value>,
}

/// The slots of the pool, each holding a warm child or nothing yet.
pub(crate) struct Pool {
    slots: Vec<Mutex<Option<Warm>>>,
    next: AtomicUsize,
}

impl Pool {
    pub(crate) fn new(size: usize) -> Self {
        Pool {
            slots: (0..size.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// A warm child, the slots taken in turn; a slot whose child is gone gets a new one.
    pub(crate) async fn warm(&self, starter: &Starter, timeout: Duration) -> Result<Warm, Error> {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        self.fill(index, starter, timeout).await
    }

    /// The child of slot `index`, started and initialized if it has none alive.
    pub(crate) async fn fill(
        &self,
        index: usize,
        starter: &Starter,
        timeout: Duration,
    ) -> Result<Warm, Error> {
        let mut slot = self.slots[index].lock().await;
        if let Some(warm) = slot.as_ref().filter(|w| w.link.is_open()) {
            return Ok(warm.clone());
        }
        let label = format!("pool-{index}");
        let (link, events) = starter.start(&label)?;
        tokio::spawn(answer_child(link.clone(), events));
        let initialized = match initialize(&link, timeout).await {
            Ok(result) => result,
            Err(why) => {
                link.stop().await;
                return Err(why);
            }
        };
        let warm = Warm {
            link,
            initialized: Arc::new(initialized),
        };
        *slot = Some(warm.clone());
        Ok(warm)
    }
}

/// The gateway's own `initialize` of a pool child, and `notifications/initialized`; the
/// child's result. No client capabilities: a per-request client cannot be asked anything
/// through a child shared with others.
async fn initialize(link: &Link, timeout: Duration) -> Result<Value, Error> {
    let params = json!({
        "protocolVersion": CHILD_VERSION.as_str(),
        "capabilities": {},
        "clientInfo": {"name": "mcp-gateway", "version": env!("CARGO_PKG_VERSION")},
    });
    let request = Request::new(0, "initialize", to_raw_value(&params).ok());
    let mut call = link.call(request).await?;
    let response = loop {
        match tokio::time::timeout(timeout, call.next()).await {
            Ok(Ok(Some(Message::Response(response)))) => break response,
            Ok(Ok(_)) => continue,
            Ok(Err(why)) => return Err(why),
            Err(_elapsed) => return Err(Error::Timeout(timeout)),
        }
    };
    let result = match response.result() {
        Ok(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
        Err(error) => return Err(Error::Initialize(error.message.clone())),
    };
    let initialized = Notification::new("notifications/initialized", None);
    link.send(initialized.into()).await?;
    Ok(result)
}

/// Answers what a pool child asks on its own: `ping`, and a refusal for anything else (there
/// is no one client to ask). Its notifications have no one to go to either.
async fn answer_child(link: Link, mut events: mpsc::Receiver<Message>) {
    while let Some(message) = events.recv().await {
        let Message::Request(request) = message else {
            tracing::debug!(?message, "a pool child's message has no client");
            continue;
        };
        let response = if request.method == "ping" {
            Response::success(
                request.id,
                to_raw_value(&json!({})).expect("an empty object"),
            )
        } else {
            let why = "a per-request client cannot be asked through the gateway";
            Response::error(
                Some(request.id),
                ErrorObject::new(code::METHOD_NOT_FOUND, why),
            )
        };
        let _ = link.send(response.into()).await;
    }
}
