//! The stores' latency and failures (`mcp.server.store.duration`, `mcp.server.store.failed`):
//! each store a service is given is wrapped, once, in a [`Measured`] that times every call of
//! it, whatever the store (in memory, Redis, a cluster's), and so is a cluster's seam (its
//! calls in `cluster.rs`).

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use mcp_jsonrpc::Id;
use opentelemetry::KeyValue;

use crate::core::config::Config;
use crate::core::store::event_store::{
    Begun, EventStore, ReplayError, StoreError, StoreFuture, StoredEvent, Unfinished, Write,
};
use crate::core::store::fence::{Fence, NotHolder};
use crate::core::store::session_store::{SessionRecord, SessionStore};
use crate::core::telemetry::Telemetry;
use crate::protocol::ProtocolVersion;

/// The `error.type` of a store call that failed.
const FAILED: &str = "store_error";

/// A store whose every call is timed and, when it fails, counted.
pub(crate) struct Measured<S: ?Sized> {
    pub(super) store: Arc<S>,
    telemetry: Telemetry,
}

impl<S: ?Sized + Send + Sync> Measured<S> {
    pub(crate) fn new(store: Arc<S>, telemetry: &Telemetry) -> Measured<S> {
        Measured {
            store,
            telemetry: telemetry.clone(),
        }
    }

    /// `call`, timed as `operation` (`mcp.store.operation`); `failed` says whether its
    /// outcome is a failure of the store.
    pub(super) fn timed<'a, T: Send + 'a>(
        &'a self,
        operation: &'static str,
        call: StoreFuture<'a, T>,
        failed: fn(&T) -> bool,
    ) -> StoreFuture<'a, T> {
        Box::pin(async move {
            let started = Instant::now();
            let outcome = call.await;
            self.telemetry
                .store_call(operation, started.elapsed().as_secs_f64(), failed(&outcome));
            outcome
        })
    }
}

impl Telemetry {
    /// A store call took `seconds`, and failed or not.
    fn store_call(&self, operation: &'static str, seconds: f64, failed: bool) {
        let Some(inner) = &self.inner else { return };
        let operation = KeyValue::new("mcp.store.operation", operation);
        if failed {
            inner
                .store_failures
                .add(1, std::slice::from_ref(&operation));
            let attributes = [operation, KeyValue::new("error.type", FAILED)];
            inner.store_duration.record(seconds, &attributes);
        } else {
            inner.store_duration.record(seconds, &[operation]);
        }
    }
}

pub(super) fn never<T>(_: &T) -> bool {
    false
}

/// A store that failed; one that refused a write fenced by a holding it no longer has
/// ([`NotHolder`]) answered, as it is meant to.
pub(super) fn failed<T>(outcome: &Result<T, StoreError>) -> bool {
    outcome
        .as_ref()
        .is_err_and(|e| e.downcast_ref::<NotHolder>().is_none())
}

/// A replay that found no events to give is an answer; only a store that failed is a failure.
fn replay_failed(outcome: &Result<Vec<StoredEvent>, ReplayError>) -> bool {
    matches!(outcome, Err(ReplayError::Failed(_)))
}

impl<S: EventStore + ?Sized> EventStore for Measured<S> {
    fn write<'a>(
        &'a self,
        session: &'a str,
        fence: Option<Fence>,
        writes: &'a [Write],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let call = self.store.write(session, fence, writes);
        self.timed("event.write", call, failed)
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, ReplayError>> {
        let call = self.store.replay_after(session, stream, after);
        self.timed("event.replay", call, replay_failed)
    }

    fn begin<'a>(
        &'a self,
        session: &'a str,
        fence: Fence,
        stream: u64,
        requests: &'a [Id],
        forward: Option<&'a str>,
    ) -> StoreFuture<'a, Result<Begun, StoreError>> {
        let call = self.store.begin(session, fence, stream, requests, forward);
        self.timed("event.begin", call, failed)
    }

    fn unfinished<'a>(
        &'a self,
        session: &'a str,
    ) -> StoreFuture<'a, Result<Vec<Unfinished>, StoreError>> {
        let call = self.store.unfinished(session);
        self.timed("event.unfinished", call, failed)
    }

    fn close<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.timed("event.close", self.store.close(session), never)
    }
}

impl<S: SessionStore + ?Sized> SessionStore for Measured<S> {
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        self.timed("session.create", self.store.create(record), failed)
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        self.timed("session.load", self.store.load(id), failed)
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let call = self.store.touch(id, fence, at);
        self.timed("session.touch", call, failed)
    }

    fn set_version<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        version: ProtocolVersion,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let call = self.store.set_version(id, fence, version);
        self.timed("session.set_version", call, failed)
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.timed("session.remove", self.store.remove(id), never)
    }
}

/// Wraps the stores a service was given (its config's, a cluster's too), once, so that every
/// call of them is measured.
pub(crate) fn measure(config: &mut Config, telemetry: &Telemetry) {
    if !telemetry.is_on() {
        return;
    }
    if let Some(store) = config.event_store.take() {
        config.event_store = Some(Arc::new(Measured::new(store, telemetry)));
    }
    if let Some(store) = config.session_store.take() {
        config.session_store = Some(Arc::new(Measured::new(store, telemetry)));
    }
    if let Some(cluster) = config.cluster.take() {
        config.cluster = Some(Arc::new(Measured::new(cluster, telemetry)));
    }
}
