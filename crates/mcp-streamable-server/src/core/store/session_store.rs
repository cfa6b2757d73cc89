//! Keeping the record of each session where more than one process can read it.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use bytes::Bytes;

use crate::core::store::event_store::{StoreError, StoreFuture};
use crate::core::store::fence::Fence;
use crate::protocol::ProtocolVersion;

/// What is known of a session beyond the process serving it: enough for another process to
/// recognise the session and start its application again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The session id, as in `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated protocol version, once the `initialize` result settled it.
    pub protocol_version: Option<ProtocolVersion>,
    /// The `initialize` request that started the session, as JSON.
    pub initialize: Bytes,
    /// Who started the session, when an upstream layer said (see
    /// [`SessionOwner`](crate::SessionOwner)).
    pub owner: Option<String>,
    /// The last time a request of the session was seen.
    pub last_active: SystemTime,
}

impl SessionRecord {
    /// The record of a session started now by `initialize`.
    pub fn new(id: impl Into<String>, initialize: Bytes, owner: Option<String>) -> Self {
        SessionRecord {
            id: id.into(),
            protocol_version: None,
            initialize,
            owner,
            last_active: SystemTime::now(),
        }
    }
}

/// Where a server keeps its sessions' records, beside the [`EventStore`] that keeps their
/// messages.
///
/// The server creates a record when a session starts (before answering its `initialize`),
/// looks one up when a request names a session this process does not hold, touches it as
/// requests come (at most once per quarter of the idle timeout), sets the version the
/// `initialize` result settles, and removes it when the session ends.
///
/// With a [`Cluster`](crate::Cluster) (which brings its own store), the cluster creates and
/// removes records, and touches and versions carry the session's [`Fence`]: a shared store
/// refuses them with [`NotHolder`](crate::NotHolder) when the fence is not the session's
/// holding, or the session is unknown, and changes nothing.
///
/// Without one (the default) a session's record is the session itself, in the memory of the
/// process serving it: nothing is written twice, and nothing is kept per session beyond what
/// serving it takes. [`InMemorySessionStore`] is the reference implementation of the contract
/// for stores that share records between processes.
///
/// [`EventStore`]: crate::EventStore
pub trait SessionStore: Send + Sync + 'static {
    /// Keeps the record of a new session.
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>>;

    /// The record of session `id`, if it is known.
    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>>;

    /// A request of session `id` was seen at `at`; `fence` is its holding, with a cluster.
    fn touch<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The `initialize` result of session `id` settled `version`; `fence` is its holding, with
    /// a cluster.
    fn set_version<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        version: ProtocolVersion,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// Session `id` ended: its record goes.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;
}

/// A [`SessionStore`] in this process's memory: the reference for the contract, and a store
/// for tests. It shares nothing between processes, and checks no fence (a store shared by
/// nodes must; `InMemoryNetwork`'s does).
///
/// ```
/// use mcp_streamable_server::{Config, InMemorySessionStore};
///
/// let config = Config::default().session_store(InMemorySessionStore::default());
/// # let _ = config;
/// ```
#[derive(Clone, Default)]
pub struct InMemorySessionStore {
    records: Arc<Mutex<HashMap<String, SessionRecord>>>,
}

impl fmt::Debug for InMemorySessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemorySessionStore")
            .field("sessions", &self.len())
            .finish()
    }
}

impl InMemorySessionStore {
    /// The number of records kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionRecord>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, id: &str, change: impl FnOnce(&mut SessionRecord)) {
        if let Some(record) = self.lock().get_mut(id) {
            change(record);
        }
    }
}

fn ready<T: Send + 'static>(value: T) -> StoreFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl SessionStore for InMemorySessionStore {
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        self.lock().insert(record.id.clone(), record);
        ready(Ok(()))
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        ready(Ok(self.lock().get(id).cloned()))
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        _fence: Option<Fence>,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.update(id, |r| r.last_active = r.last_active.max(at));
        ready(Ok(()))
    }

    fn set_version<'a>(
        &'a self,
        id: &'a str,
        _fence: Option<Fence>,
        version: ProtocolVersion,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.update(id, |r| r.protocol_version = Some(version));
        ready(Ok(()))
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.lock().remove(id);
        ready(())
    }
}

/// Checks that `store` keeps the [`SessionStore`] contract the server relies on, and panics
/// naming the promise it breaks: what is created is loaded whole, touched (never back in
/// time), given its version and removed; unknown ids are no error, and touching or versioning
/// one creates nothing. It uses the ids `contract-1` and `contract-2`, which the store must not
/// hold, and leaves the store as it found it. For the authors of stores, in their tests; with
/// the `testing` feature.
///
/// ```
/// # tokio_test_block_on(async {
/// use mcp_streamable_server::{InMemorySessionStore, check_session_store};
///
/// check_session_store(&InMemorySessionStore::default()).await;
/// # });
/// # fn tokio_test_block_on(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub async fn check_session_store(store: &dyn SessionStore) {
    use std::time::Duration;

    let (id, unknown) = ("contract-1", "contract-2");
    let record = SessionRecord::new(id, Bytes::from_static(b"{}"), Some("alice".into()));
    store.create(record.clone()).await.expect("create");
    let loaded = store.load(id).await.expect("load");
    assert_eq!(loaded, Some(record.clone()), "a created record loads whole");
    let none = store.load(unknown).await.expect("load of an unknown id");
    assert_eq!(none, None, "an unknown id loads as none");
    let later = record.last_active + Duration::from_secs(5);
    store.touch(id, None, later).await.expect("touch");
    store
        .touch(id, None, record.last_active)
        .await
        .expect("touch");
    let version = ProtocolVersion::V2025_11_25;
    store
        .set_version(id, None, version)
        .await
        .expect("set_version");
    let loaded = store
        .load(id)
        .await
        .expect("load")
        .expect("a touched record");
    assert_eq!(
        loaded.last_active, later,
        "touches never move the time back"
    );
    assert_eq!(
        loaded.protocol_version,
        Some(version),
        "the version is kept"
    );
    store
        .touch(unknown, None, later)
        .await
        .expect("touch of an unknown id");
    store
        .set_version(unknown, None, version)
        .await
        .expect("set_version of an unknown id");
    let none = store.load(unknown).await.expect("load of an unknown id");
    assert_eq!(
        none, None,
        "touching or versioning an unknown id creates nothing"
    );
    store.remove(id).await;
    store.remove(id).await;
    let gone = store.load(id).await.expect("load of a removed id");
    assert_eq!(gone, None, "a removed record is gone");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_in_memory_store_keeps_the_contract() {
        let store = InMemorySessionStore::default();
        check_session_store(&store).await;
        assert!(store.is_empty());
    }
}
