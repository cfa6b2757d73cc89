//! The [`Cluster`] on Redis: holders in the sessions' hashes, fenced; leases and addresses in
//! the membership; takeovers a compare-and-swap.

use std::sync::Arc;
use std::time::Instant;

use mcp_streamable_server::{
    Cluster, EventStore, Fence, Holder, Lease, Location, Member, SessionRecord, SessionStore,
    StoreError, StoreFuture, TakeOver,
};
use redis::Value;

use crate::error::{Error, Kind};
use crate::event_store::RedisEventStore;
use crate::lease::Keeper;
use crate::node::{Node, fence_args};
use crate::scripts::{self, Call};
use crate::session_store::{RedisSessionStore, encode_record, time_to_field};

/// The [`Cluster`] of a [`RedisBackend`](crate::RedisBackend): this node among every node on
/// the same Redis and prefix.
///
/// - [`start`](Cluster::start) records a session and its holder in one script;
///   [`locate`](Cluster::locate) reads the holder, one command.
/// - [`take_over`](Cluster::take_over) reads the membership afresh (the holder may have renewed,
///   or the records just came back: then nobody takes anything over for a lease), then swaps the
///   holder if the record still names the one read.
/// - Every write and delete of a session carries its fence, and changes nothing when the record
///   names another holding.
/// - [`member`](Cluster::member) answers from the membership read with the last renewal.
#[derive(Debug, Clone)]
pub struct RedisCluster {
    node: Arc<Node>,
    event_store: Arc<RedisEventStore>,
    session_store: Arc<RedisSessionStore>,
}

impl RedisCluster {
    pub(crate) fn new(node: Arc<Node>, keeper: Arc<Keeper>) -> Self {
        RedisCluster {
            event_store: Arc::new(RedisEventStore::new(Arc::clone(&node), Arc::clone(&keeper))),
            session_store: Arc::new(RedisSessionStore::new(Arc::clone(&node), keeper)),
            node,
        }
    }

    async fn start(&self, record: &SessionRecord) -> Result<Fence, Error> {
        let node = &self.node;
        let incarnation = node.lease.incarnation();
        let mut call = Call::new(
            &scripts::START,
            &[node.keys.session(&record.id), node.keys.record(&record.id)],
        );
        call.arg(encode_record(record))
            .arg(time_to_field(record.last_active))
            .arg(&node.options.node)
            .arg(incarnation)
            .arg(node.options.key_ttl_ms());
        node.script(&call).await?;
        Ok(Fence::new(incarnation, 0))
    }

    async fn locate(&self, session: &str) -> Result<Location, Error> {
        let node = &self.node;
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(node.keys.session(session))
            .arg("node")
            .arg("inc")
            .arg("gen");
        let fields: Vec<Option<String>> = node.query(&cmd).await?;
        let number = |field: &Option<String>| field.as_deref().and_then(|f| f.parse::<u64>().ok());
        Ok(match fields.as_slice() {
            [_, _, None] => Location::Unknown,
            [None, _, generation] => Location::Free {
                generation: number(generation).ok_or_else(|| Error::new(Kind::Malformed))?,
            },
            [Some(holder), incarnation, generation] => {
                let fence = Fence::new(
                    number(incarnation).ok_or_else(|| Error::new(Kind::Malformed))?,
                    number(generation).ok_or_else(|| Error::new(Kind::Malformed))?,
                );
                Location::Held(Holder::new(holder.as_str(), fence))
            }
            _ => return Err(Error::new(Kind::Malformed)),
        })
    }

    async fn take_over(&self, session: &str, from: &Location) -> Result<TakeOver, Error> {
        let node = &self.node;
        let incarnation = node.lease.incarnation();
        let (holder, holder_incarnation, generation) = match from {
            Location::Held(holder) => {
                let ours =
                    holder.node == node.options.node && holder.fence.incarnation == incarnation;
                if !ours && let Some(other) = self.alive_or_quiet(holder).await? {
                    return Ok(other);
                }
                (
                    holder.node.as_str(),
                    holder.fence.incarnation.to_string(),
                    holder.fence.generation,
                )
            }
            Location::Free { generation } => ("", String::new(), *generation),
            _ => return Ok(TakeOver::Moved),
        };
        if !node.lease.is_valid() {
            // A node that cannot prove its own lease takes nothing over.
            return Err(Error::new(Kind::NotHolder));
        }
        let mut call = Call::new(
            &scripts::TAKE_OVER,
            &[node.keys.session(session), node.keys.record(session)],
        );
        call.arg(holder)
            .arg(holder_incarnation)
            .arg(generation)
            .arg(&node.options.node)
            .arg(incarnation)
            .arg(node.options.key_ttl_ms());
        match node.script(&call).await? {
            Value::Int(generation) if generation >= 0 => {
                Ok(TakeOver::Taken(Fence::new(incarnation, generation as u64)))
            }
            Value::Int(-1 | -2) => Ok(TakeOver::Moved),
            _ => Err(Error::new(Kind::Malformed)),
        }
    }

    /// `holder` as the membership says now: alive (forward to it), or the records came back
    /// too recently for anyone to take a session over; `None` when its lease lapsed.
    async fn alive_or_quiet(&self, holder: &Holder) -> Result<Option<TakeOver>, Error> {
        let node = &self.node;
        let reading = node
            .members(&node.conn, "read", 0, node.options.command_timeout)
            .await?;
        let read_at = Instant::now();
        node.members.update(&reading, read_at);
        if let Some(member) = reading
            .member(&holder.node, read_at)
            .filter(|m| m.incarnation == holder.fence.incarnation)
        {
            return Ok(Some(TakeOver::Alive(member)));
        }
        Ok(reading.quiet_for(node.options.lease).map(TakeOver::Wait))
    }

    async fn reclaim(&self, session: &str, fence: Fence) -> Result<Option<Fence>, Error> {
        let node = &self.node;
        let incarnation = node.lease.incarnation();
        let mut call = Call::new(&scripts::RECLAIM, &[node.keys.session(session)]);
        fence_args(&mut call, &node.options.node, Some(fence));
        call.arg(incarnation);
        Ok(match node.script(&call).await? {
            Value::Int(1) => Some(Fence::new(incarnation, fence.generation)),
            Value::Int(0) => None,
            _ => return Err(Error::new(Kind::Malformed)),
        })
    }

    async fn fenced_script(
        &self,
        script: &'static redis::Script,
        session: &str,
        fence: Fence,
    ) -> Result<(), Error> {
        let node = &self.node;
        let mut call = Call::new(script, &[node.keys.session(session)]);
        fence_args(&mut call, &node.options.node, Some(fence));
        node.script(&call).await.map(drop)
    }
}

fn logged(what: &'static str, session: &str, result: Result<(), Error>) {
    if let Err(error) = result {
        tracing::warn!(%error, session_id = session, "redis cluster: {what} failed");
    }
}

impl Cluster for RedisCluster {
    fn node(&self) -> &str {
        &self.node.options.node
    }

    fn lease(&self) -> &Lease {
        &self.node.lease
    }

    fn event_store(&self) -> Arc<dyn EventStore> {
        Arc::clone(&self.event_store) as Arc<dyn EventStore>
    }

    fn session_store(&self) -> Arc<dyn SessionStore> {
        Arc::clone(&self.session_store) as Arc<dyn SessionStore>
    }

    fn start<'a>(
        &'a self,
        record: &'a SessionRecord,
    ) -> StoreFuture<'a, Result<Fence, StoreError>> {
        Box::pin(async move { Ok(self.start(record).await?) })
    }

    fn locate<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<Location, StoreError>> {
        Box::pin(async move { Ok(self.locate(session).await?) })
    }

    fn take_over<'a>(
        &'a self,
        session: &'a str,
        from: &'a Location,
    ) -> StoreFuture<'a, Result<TakeOver, StoreError>> {
        Box::pin(async move { Ok(self.take_over(session, from).await?) })
    }

    fn reclaim<'a>(
        &'a self,
        session: &'a str,
        fence: Fence,
    ) -> StoreFuture<'a, Result<Option<Fence>, StoreError>> {
        Box::pin(async move { Ok(self.reclaim(session, fence).await?) })
    }

    fn end<'a>(&'a self, session: &'a str, fence: Fence) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            logged("end", session, self.node.end(session, Some(fence)).await);
        })
    }

    fn hand_over<'a>(&'a self, session: &'a str, fence: Fence) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let result = self
                .fenced_script(&scripts::HAND_OVER, session, fence)
                .await;
            logged("hand over", session, result);
        })
    }

    fn member(&self, node: &str) -> Option<Member> {
        self.node.members.member(node)
    }

    fn listener(&self) -> Option<std::net::TcpListener> {
        self.node.take_listener()
    }

    fn secret(&self) -> &[u8] {
        &self.node.secret
    }
}
