//! The event store's place in the send path, with a store that takes its time (as a remote one
//! does): S10 routing that a dropped send cannot leave half done, S16 nothing stored after the
//! session ended.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::StatusCode;
use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_server::{
    Config, EventStore, Fence, InMemoryEventStore, ReplayError, ServerConnection, StoreError,
    StoreFuture, StoredEvent, Write,
};
use mcp_transport::{Connection, Sender};
use serde_json::json;

use crate::harness::*;
use crate::lifecycle::{counting, settle};

/// An in-memory store whose writes take 10 ms.
#[derive(Clone, Default)]
struct SlowStore(InMemoryEventStore);

impl EventStore for SlowStore {
    fn write<'a>(
        &'a self,
        session: &'a str,
        fence: Option<Fence>,
        writes: &'a [Write],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            self.0.write(session, fence, writes).await
        })
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, ReplayError>> {
        self.0.replay_after(session, stream, after)
    }

    fn close<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.0.close(session)
    }
}

/// A store whose writes wait at a gate while it is shut, and that records the order of their
/// appends.
#[derive(Clone, Default)]
struct GatedStore {
    inner: InMemoryEventStore,
    shut: Arc<AtomicBool>,
    open: Arc<tokio::sync::Notify>,
    /// Writes held at the gate now.
    held: Arc<std::sync::atomic::AtomicUsize>,
    appended: Arc<std::sync::Mutex<Vec<u64>>>,
}

impl EventStore for GatedStore {
    fn write<'a>(
        &'a self,
        session: &'a str,
        fence: Option<Fence>,
        writes: &'a [Write],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if self.shut.load(Ordering::Acquire) {
                self.held.fetch_add(1, Ordering::AcqRel);
                while self.shut.load(Ordering::Acquire) {
                    let opened = self.open.notified();
                    tokio::pin!(opened);
                    opened.as_mut().enable();
                    if !self.shut.load(Ordering::Acquire) {
                        break;
                    }
                    opened.await;
                }
                self.held.fetch_sub(1, Ordering::AcqRel);
            }
            {
                let mut appended = self.appended.lock().unwrap();
                for write in writes {
                    if let Write::Append { index, .. } = write {
                        appended.push(*index);
                    }
                }
            }
            self.inner.write(session, fence, writes).await
        })
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, ReplayError>> {
        self.inner.replay_after(session, stream, after)
    }

    fn close<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.inner.close(session)
    }
}

/// A send does not wait for the store: with the store's writes held, the first send's write
/// goes on in a task of its own and the next send returns at once too, its message queued for
/// the store in order (the store is written by one writer at a time, outside the session's
/// lock). Before, a send that became the writer waited for its write. The messages reach their
/// reader either way; a resumption waits for the store to catch up.
#[tokio::test]
async fn a_send_does_not_wait_for_the_store() {
    let store = GatedStore::default();
    let (senders, mut sender_rx) = tokio::sync::mpsc::unbounded_channel();
    let service = service_with(
        Config::default().event_store(store.clone()),
        move |conn, parts| {
            let _ = senders.send(conn.sender());
            crate::app::session(conn, parts)
        },
    );
    let sid = initialize(&service, "2025-11-25").await;
    let sender = sender_rx.recv().await.expect("the session's sender");
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    let priming = standalone.until_id().await;
    store.shut.store(true, Ordering::Release);
    let note = |i: i64| crate::app::notification("notifications/message", json!({"i": i}));
    tokio::time::timeout(WAIT, sender.send(note(1).into()))
        .await
        .expect("the first send returns while its write waits on the store")
        .unwrap();
    // Its write is held at the gate, by the writer's task.
    tokio::time::timeout(WAIT, async {
        while store.held.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the first write reaches the gate");
    tokio::time::timeout(WAIT, sender.send(note(2).into()))
        .await
        .expect("the second send returns while the first write waits on the store")
        .unwrap();
    // Both messages reach the reader at once, whatever the store does.
    let seen: Vec<String> = [standalone.next().await, standalone.next().await]
        .iter()
        .map(|e| label(&message(e.as_ref().expect("a message"))))
        .collect();
    assert_eq!(seen, ["n:notifications/message", "n:notifications/message"]);
    // A resumption waits for the store: it replays both once the gate opens.
    drop(standalone);
    let resumed = tokio::spawn({
        let service = service.clone();
        async move {
            Sse::new(service.handle(get(&sid, Some(&priming))).await)
                .rest(2)
                .await
        }
    });
    store.shut.store(false, Ordering::Release);
    store.open.notify_waiters();
    let replayed = resumed.await.unwrap();
    assert_eq!(replayed.len(), 2);
    let appended = store.appended.lock().unwrap().clone();
    let (n1, n2) = (appended[appended.len() - 2], appended[appended.len() - 1]);
    assert!(n1 < n2, "appended in the order sent: {appended:?}");
}

/// Answers each request with a send it gives up on after 1 ms, while the store is busy.
async fn impatient(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        if let Message::Request(r) = message {
            let result = json!({"protocolVersion": "2025-06-18"});
            let response = Response::success(r.id, to_raw_value(&result).unwrap());
            let _ =
                tokio::time::timeout(Duration::from_millis(1), sender.send(response.into())).await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn s10_a_send_dropped_while_storing_still_ends_its_stream() {
    let config = Config::default()
        .event_store(SlowStore::default())
        .max_sessions(1);
    let service = service_with(config, impatient);
    let sid = initialize(&service, "2025-06-18").await;
    let response = service.handle(request(post(Some(&sid)), ping(1))).await;
    // Routed before the send was dropped: the response is written and the stream ends.
    let msgs = messages(&sse_events(response, 10).await);
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    // And the session is idle again: a new one can take its place.
    settle().await;
    let response = service
        .handle(request(post(None), initialize_body(0, "2025-06-18")))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn s16_nothing_is_stored_after_the_session_ends() {
    let store = SlowStore::default();
    let (service, _, ended) = counting(Config::default().event_store(store.clone()));
    let sid = initialize(&service, "2025-06-18").await;
    // The application keeps sending while the client deletes the session.
    let flood = request(post(Some(&sid)), call(1, "flood", json!({"count": 1000})));
    let flood = tokio::spawn({
        let service = service.clone();
        async move { drop(service.handle(flood).await) }
    });
    tokio::time::sleep(Duration::from_millis(55)).await;
    assert!(store.0.retained_bytes() > 0);
    let response = service.handle(delete(&sid)).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    tokio::time::sleep(Duration::from_secs(1)).await;
    flood.await.unwrap();
    settle().await;
    assert_eq!(ended.load(Ordering::SeqCst), 1);
    assert_eq!(store.0.session_count(), 0);
    assert_eq!(store.0.retained_bytes(), 0);
}
