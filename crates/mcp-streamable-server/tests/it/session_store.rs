//! The session store seam: a record created before `initialize` is answered, its version set
//! by the `initialize` result, touched at most once per quarter of the idle timeout, removed
//! when the session ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use http::StatusCode;
use mcp_streamable_server::{
    Config, Fence, InMemorySessionStore, ProtocolVersion, SessionRecord, SessionStore, StoreError,
    StoreFuture,
};

use crate::harness::*;

/// The in-memory store, counting touches.
#[derive(Clone, Default)]
struct Counting {
    inner: InMemorySessionStore,
    touches: Arc<AtomicUsize>,
}

impl SessionStore for Counting {
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        self.inner.create(record)
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        self.inner.load(id)
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.touches.fetch_add(1, Ordering::Relaxed);
        self.inner.touch(id, fence, at)
    }

    fn set_version<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        version: ProtocolVersion,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.inner.set_version(id, fence, version)
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.inner.remove(id)
    }
}

#[tokio::test(start_paused = true)]
async fn a_session_is_recorded_touched_and_forgotten_through_the_store() {
    let store = Counting::default();
    let config = Config::default()
        .session_store(store.clone())
        .idle_timeout(Duration::from_secs(40));
    let service = service(config);
    let sid = initialize(&service, "2025-11-25").await;
    let record = store.inner.load(&sid).await.unwrap().expect("a record");
    assert_eq!(record.protocol_version, Some(ProtocolVersion::V2025_11_25));
    assert!(
        std::str::from_utf8(&record.initialize)
            .unwrap()
            .contains("\"initialize\"")
    );
    assert_eq!(record.owner, None);
    let ping_ok = |id| {
        let service = service.clone();
        let sid = sid.clone();
        async move {
            let response = service.handle(request(post(Some(&sid)), ping(id))).await;
            assert_eq!(response.status(), StatusCode::OK);
            let _ = sse_events(response, 10).await;
        }
    };
    // Within the quarter of the idle timeout (10 s) the session started in: not touched.
    ping_ok(1).await;
    assert_eq!(store.touches.load(Ordering::Relaxed), 0);
    tokio::time::advance(Duration::from_secs(11)).await;
    ping_ok(2).await;
    ping_ok(3).await;
    assert_eq!(store.touches.load(Ordering::Relaxed), 1);
    let deleted = service.handle(delete(&sid)).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert!(store.inner.load(&sid).await.unwrap().is_none());
    assert!(store.inner.is_empty());
}

/// A failed store refuses the session: nothing is registered, and the client is told.
#[tokio::test]
async fn a_session_the_store_cannot_record_is_not_started() {
    struct Broken;
    impl SessionStore for Broken {
        fn create(&self, _: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
            Box::pin(std::future::ready(Err("the store is down".into())))
        }
        fn load<'a>(
            &'a self,
            _: &'a str,
        ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
            Box::pin(std::future::ready(Ok(None)))
        }
        fn touch<'a>(
            &'a self,
            _: &'a str,
            _: Option<Fence>,
            _: SystemTime,
        ) -> StoreFuture<'a, Result<(), StoreError>> {
            Box::pin(std::future::ready(Ok(())))
        }
        fn set_version<'a>(
            &'a self,
            _: &'a str,
            _: Option<Fence>,
            _: ProtocolVersion,
        ) -> StoreFuture<'a, Result<(), StoreError>> {
            Box::pin(std::future::ready(Ok(())))
        }
        fn remove<'a>(&'a self, _: &'a str) -> StoreFuture<'a, ()> {
            Box::pin(std::future::ready(()))
        }
    }
    let service = service(Config::default().session_store(Broken));
    let response = service
        .handle(request(post(None), initialize_body(0, "2025-11-25")))
        .await;
    assert!(session_id(response.headers()).is_none());
    // A store out of reach is a condition to retry, not the server's bug: 503, saying so.
    let (_, id, message) = refusal(response, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(id, Some(mcp_jsonrpc::Id::from(0)));
    assert!(message.contains("the store is down"), "{message}");
    assert_eq!(service.session_count(), 0);
}
