//! A cluster's calls timed like a store's (`mcp.server.store.duration`, `mcp.server.store.failed`,
//! `mcp.store.operation` = `cluster.*`): where a session is, its start, takeover, reclaim, end
//! and hand-over, each a round trip to the shared records.

use std::sync::Arc;

use crate::core::cluster::lease::Lease;
use crate::core::cluster::{Cluster, Fence, Location, Member, TakeOver};
use crate::core::store::event_store::{EventStore, StoreError, StoreFuture};
use crate::core::store::session_store::{SessionRecord, SessionStore};
use crate::core::telemetry::store::{Measured, failed, never};

impl Cluster for Measured<dyn Cluster> {
    fn node(&self) -> &str {
        self.store.node()
    }

    fn lease(&self) -> &Lease {
        self.store.lease()
    }

    fn event_store(&self) -> Arc<dyn EventStore> {
        self.store.event_store()
    }

    fn session_store(&self) -> Arc<dyn SessionStore> {
        self.store.session_store()
    }

    fn start<'a>(
        &'a self,
        record: &'a SessionRecord,
    ) -> StoreFuture<'a, Result<Fence, StoreError>> {
        self.timed("cluster.start", self.store.start(record), failed)
    }

    fn locate<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<Location, StoreError>> {
        self.timed("cluster.locate", self.store.locate(session), failed)
    }

    fn take_over<'a>(
        &'a self,
        session: &'a str,
        from: &'a Location,
    ) -> StoreFuture<'a, Result<TakeOver, StoreError>> {
        let call = self.store.take_over(session, from);
        self.timed("cluster.take_over", call, failed)
    }

    fn reclaim<'a>(
        &'a self,
        session: &'a str,
        fence: Fence,
    ) -> StoreFuture<'a, Result<Option<Fence>, StoreError>> {
        let call = self.store.reclaim(session, fence);
        self.timed("cluster.reclaim", call, failed)
    }

    fn end<'a>(&'a self, session: &'a str, fence: Fence) -> StoreFuture<'a, ()> {
        self.timed("cluster.end", self.store.end(session, fence), never)
    }

    fn hand_over<'a>(&'a self, session: &'a str, fence: Fence) -> StoreFuture<'a, ()> {
        let call = self.store.hand_over(session, fence);
        self.timed("cluster.hand_over", call, never)
    }

    fn member(&self, node: &str) -> Option<Member> {
        self.store.member(node)
    }

    fn listener(&self) -> Option<std::net::TcpListener> {
        self.store.listener()
    }

    fn secret(&self) -> &[u8] {
        self.store.secret()
    }
}
