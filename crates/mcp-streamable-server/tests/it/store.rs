//! The event store's place in the send path, with a store that takes its time (as a remote one
//! does): S10 routing that a dropped send cannot leave half done, S16 nothing stored after the
//! session ended.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_server::{
    Config, EventStore, InMemoryEventStore, ReplayError, ServerConnection, StoreError, StoreFuture,
    StoredEvent,
};
use mcp_transport::{Connection, Sender};
use serde_json::json;

use crate::harness::*;
use crate::lifecycle::{counting, settle};

/// An in-memory store whose appends take 10 ms.
#[derive(Clone, Default)]
struct SlowStore(InMemoryEventStore);

impl EventStore for SlowStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        index: u64,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            self.0.append(session, stream, index, message).await
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

    fn stream_finished<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        self.0.stream_finished(session, stream)
    }

    fn session_closed<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.0.session_closed(session)
    }
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
