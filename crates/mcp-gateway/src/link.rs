//! The JSON-RPC link to one child: requests go to it under ids of the gateway's own, so that
//! requests of any number of clients never mix, and its answers come back under the ids their
//! clients gave; its progress goes to the call whose token it names; everything else it says
//! (its own requests, other notifications) is an event for the link's owner.
//!
//! The link ends when the child closes its stdout, exits, or writes a line that is not JSON-RPC
//! or is too long: every call waiting gets that error at once, the child is stopped, and the
//! events end. No restart: a child that failed is not trusted with its session again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use mcp_jsonrpc::{Id, Message, Notification, Request, Response, to_raw_value};
use mcp_transport::stdio::{StdioConnection, StdioSender};
use mcp_transport::{Connection, ErrorKind, Outgoing, Sender};
use serde_json::{Value, json};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc;

use crate::error::Error;
use crate::process::{Process, Spawned};

/// Messages of one call (its progress, then its response) a call's reader has not taken yet.
const CALL_CAPACITY: usize = 16;
/// The child's own messages its link's owner has not taken yet.
const EVENT_CAPACITY: usize = 64;

/// A link to one child; cheap to clone.
#[derive(Clone)]
pub(crate) struct Link {
    inner: Arc<Inner>,
}

struct Inner {
    sender: StdioSender<ChildStdin>,
    calls: Mutex<Calls>,
    /// Why the link ended, once it has.
    ended: OnceLock<Error>,
    process: Process,
}

#[derive(Default)]
struct Calls {
    next: i64,
    waiting: HashMap<i64, Waiter>,
}

/// A call in flight: who asked, under which id and progress token, and where its messages go.
struct Waiter {
    origin: Id,
    token: Option<Value>,
    tx: mpsc::Sender<Message>,
}

impl Link {
    /// Starts relaying over `child`'s pipes; the receiver yields the child's own messages and
    /// ends with the link.
    pub(crate) fn start(
        child: Spawned,
        max_line: usize,
        label: &str,
    ) -> (Link, mpsc::Receiver<Message>) {
        let conn = StdioConnection::new(child.stdout, child.stdin).max_line_bytes(max_line);
        let inner = Arc::new(Inner {
            sender: conn.sender(),
            calls: Mutex::default(),
            ended: OnceLock::new(),
            process: child.process,
        });
        let (events, rx) = mpsc::channel(EVENT_CAPACITY);
        let label = label.to_owned();
        tokio::spawn(read(conn, Arc::clone(&inner), events, max_line, label));
        (Link { inner }, rx)
    }

    /// Whether the link still works.
    pub(crate) fn is_open(&self) -> bool {
        self.inner.ended.get().is_none()
    }

    /// Sends `request` to the child under an id of the link's; its progress token, if any, is
    /// replaced likewise. The [`Call`] yields what comes back for it.
    pub(crate) async fn call(&self, mut request: Request) -> Result<Call, Error> {
        let (tx, rx) = mpsc::channel(CALL_CAPACITY);
        let id = {
            let mut calls = self.inner.calls.lock().unwrap();
            if let Some(why) = self.inner.ended.get() {
                return Err(why.clone());
            }
            calls.next += 1;
            let id = calls.next;
            let token = swap_progress_token(&mut request, id);
            let origin = std::mem::replace(&mut request.id, Id::Number(id));
            calls.waiting.insert(id, Waiter { origin, token, tx });
            id
        };
        let call = Call {
            inner: Arc::clone(&self.inner),
            id,
            rx,
        };
        self.send(request.into()).await?;
        Ok(call)
    }

    /// Sends `message` to the child as it is: a notification, or the answer to its request.
    pub(crate) async fn send(&self, message: Message) -> Result<(), Error> {
        self.inner.send(message).await
    }

    /// The client cancelled its request `origin`: the child is told, under the link's id, and
    /// the call ends without a response.
    pub(crate) async fn cancel(&self, origin: &Id, reason: Option<&str>) {
        let id = {
            let mut calls = self.inner.calls.lock().unwrap();
            let found = calls.waiting.iter().find(|(_, w)| w.origin == *origin);
            let Some(id) = found.map(|(id, _)| *id) else {
                return;
            };
            calls.waiting.remove(&id);
            id
        };
        self.inner.cancel(id, reason).await;
    }

    /// The client's id of the one call in flight, if there is exactly one: what the child's
    /// own messages most likely relate to.
    pub(crate) fn sole_call(&self) -> Option<Id> {
        let calls = self.inner.calls.lock().unwrap();
        let mut waiting = calls.waiting.values();
        match (waiting.next(), waiting.next()) {
            (Some(only), None) => Some(only.origin.clone()),
            _ => None,
        }
    }

    /// Stops the child and returns once it was reaped.
    pub(crate) async fn stop(&self) {
        self.inner.process.stop().await;
    }
}

impl Inner {
    async fn send(&self, message: Message) -> Result<(), Error> {
        let sent = self.sender.send(Outgoing::new(message)).await;
        sent.map_err(|_| self.ended.get().cloned().unwrap_or(Error::Exited))
    }

    async fn cancel(&self, id: i64, reason: Option<&str>) {
        let params = json!({"requestId": id, "reason": reason});
        let params = to_raw_value(&params).ok();
        let notification = Notification::new("notifications/cancelled", params);
        let _ = self.send(notification.into()).await;
    }

    /// Ends the link for `why`: every call waiting gets it.
    fn end(&self, why: Error) {
        let mut calls = self.calls.lock().unwrap();
        let _ = self.ended.set(why);
        calls.waiting.clear();
    }
}

/// One request in flight on a link.
pub(crate) struct Call {
    inner: Arc<Inner>,
    id: i64,
    rx: mpsc::Receiver<Message>,
}

impl Call {
    /// The next message for the call: a progress notification, or its response (the last);
    /// `Ok(None)` when the call was cancelled.
    pub(crate) async fn next(&mut self) -> Result<Option<Message>, Error> {
        match self.rx.recv().await {
            Some(message) => Ok(Some(message)),
            None => match self.inner.ended.get() {
                Some(why) => Err(why.clone()),
                None => Ok(None),
            },
        }
    }

    /// Gives the call up: the child is told, under the link's id.
    pub(crate) async fn cancel(&mut self, reason: &str) {
        self.inner.calls.lock().unwrap().waiting.remove(&self.id);
        self.inner.cancel(self.id, Some(reason)).await;
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.inner.calls.lock().unwrap().waiting.remove(&self.id);
    }
}

/// Reads the child's messages until the link ends, routing each.
async fn read(
    mut conn: StdioConnection<ChildStdout, ChildStdin>,
    inner: Arc<Inner>,
    events: mpsc::Sender<Message>,
    max_line: usize,
    label: String,
) {
    let why = loop {
        match conn.recv().await {
            Ok(Some(message)) => route(&inner, &events, message).await,
            Ok(None) => break Error::Exited,
            Err(e) if e.kind() == ErrorKind::MessageTooLarge => break Error::TooLarge(max_line),
            Err(e) if e.kind() == ErrorKind::InvalidMessage => break Error::Garbage,
            Err(_) => break Error::Exited,
        }
    };
    match why {
        Error::Exited => tracing::debug!(mcp.session.id = %label, "the child closed its stdout"),
        _ => tracing::warn!(mcp.session.id = %label, reason = %why, "child misbehaved: stopped"),
    }
    inner.end(why);
    inner.process.stop().await;
}

/// Hands `message` to the call it answers or reports progress for, else to the events.
async fn route(inner: &Inner, events: &mpsc::Sender<Message>, message: Message) {
    let (tx, message) = match message {
        Message::Response(response) => match answered(inner, response) {
            Some(routed) => routed,
            None => return,
        },
        Message::Notification(notification) if notification.method == "notifications/progress" => {
            match progressed(inner, notification) {
                Ok(routed) => routed,
                Err(unrouted) => (events.clone(), unrouted.into()),
            }
        }
        other => (events.clone(), other),
    };
    let _ = tx.send(message).await;
}

/// The call a response answers, and the response under the client's id.
fn answered(inner: &Inner, response: Response) -> Option<(mpsc::Sender<Message>, Message)> {
    let (id, result) = response.into_parts();
    let Some(Id::Number(id)) = id else {
        tracing::warn!(?id, "a child answered a request it was not sent");
        return None;
    };
    let waiter = inner.calls.lock().unwrap().waiting.remove(&id)?;
    let response = match result {
        Ok(result) => Response::success(waiter.origin, result),
        Err(error) => Response::error(Some(waiter.origin), error),
    };
    Some((waiter.tx, response.into()))
}

/// The call a progress notification reports on, and the notification with the client's token;
/// the notification itself when it names no call of this link.
fn progressed(
    inner: &Inner,
    notification: Notification,
) -> Result<(mpsc::Sender<Message>, Message), Notification> {
    let Some(mut params) = notification.parse_params::<Value>().ok() else {
        return Err(notification);
    };
    let Some(id) = params["progressToken"].as_i64() else {
        return Err(notification);
    };
    let calls = inner.calls.lock().unwrap();
    let Some(waiter) = calls.waiting.get(&id) else {
        return Err(notification);
    };
    params["progressToken"] = waiter.token.clone().unwrap_or(Value::Null);
    let params = to_raw_value(&params).ok();
    let message = Notification::new(notification.method, params).into();
    Ok((waiter.tx.clone(), message))
}

/// Replaces the progress token of `request` with `id`, returning the client's.
fn swap_progress_token(request: &mut Request, id: i64) -> Option<Value> {
    let raw = request.params.as_ref()?;
    if !raw.get().contains("progressToken") {
        return None;
    }
    let mut params: Value = serde_json::from_str(raw.get()).ok()?;
    let token = params.get_mut("_meta")?.get_mut("progressToken")?;
    let original = std::mem::replace(token, Value::from(id));
    request.params = to_raw_value(&params).ok();
    Some(original)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_token_is_swapped_for_the_links_id() {
        let params = to_raw_value(&json!({"name": "x", "_meta": {"progressToken": "abc"}})).ok();
        let mut request = Request::new(7, "tools/call", params);
        assert_eq!(swap_progress_token(&mut request, 3), Some(json!("abc")));
        let params: Value = request.parse_params().unwrap();
        assert_eq!(params["_meta"]["progressToken"], json!(3));
        assert_eq!(params["name"], json!("x"));
    }

    #[test]
    fn a_request_without_a_token_is_left_alone() {
        let params = to_raw_value(&json!({"name": "progressToken"})).ok();
        let mut request = Request::new(7, "tools/call", params);
        assert_eq!(swap_progress_token(&mut request, 3), None);
        assert_eq!(request.params.unwrap().get(), r#"{"name":"progressToken"}"#);
    }
}
