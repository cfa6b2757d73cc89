//! The [`Cluster`] on Redis: holders in hashes, leases as expiring keys, forwards and news
//! over pub/sub.

use bytes::Bytes;
use mcp_streamable_server::{Cluster, Forwarded, Location, StoreError, StoreFuture, Watch};
use redis::Value;
use tokio::sync::mpsc;

use crate::backend::RedisBackend;
use crate::error::{Error, Kind};
use crate::{forward, scripts};

/// The [`Cluster`] of a [`RedisBackend`]: this node among every node on the same Redis and
/// prefix.
///
/// - [`locate`](Cluster::locate) is one Lua script: unknown session, held here, held by a live
///   node, or taken over from a node whose lease lapsed (the generation counted in the
///   session's record, so none is handed out twice).
/// - [`forward`](Cluster::forward) publishes the envelope on the holder's inbox channel and
///   waits for the answer on this node's; it fails at once if no node listens there.
/// - [`written`](Cluster::written) publishes the stream's number on the session's watch
///   channel; [`watch`](Cluster::watch) subscribes it (once per session, however many
///   watches), and a poller tells the watches whose holder's lease lapsed.
#[derive(Debug, Clone)]
pub struct RedisCluster {
    backend: RedisBackend,
}

impl RedisCluster {
    pub(crate) fn new(backend: RedisBackend) -> Self {
        RedisCluster { backend }
    }

    async fn hold(&self, session: &str) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let holder = shared.keys.holder(session);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .hset_multiple(
                &holder,
                &[("node", shared.options.node.as_str()), ("gen", "0")],
            )
            .pexpire(&holder, shared.options.key_ttl_ms() as i64);
        shared.pipe::<()>(&pipe).await
    }

    async fn locate(&self, session: &str) -> Result<Location, Error> {
        let shared = &self.backend.shared;
        let mut call = scripts::LOCATE.prepare_invoke();
        call.key(shared.keys.record(session))
            .key(shared.keys.holder(session))
            .arg(&shared.options.node)
            .arg(shared.keys.node_prefix())
            .arg(shared.options.key_ttl_ms());
        parse_location(shared.script(&call).await?).ok_or_else(|| Error::new(Kind::Malformed))
    }

    async fn release(&self, session: &str) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let mut cmd = redis::cmd("DEL");
        cmd.arg(shared.keys.holder(session));
        shared.query::<()>(&cmd).await
    }

    async fn written(&self, session: &str, stream: u64) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(shared.keys.watch(session)).arg(stream);
        shared.query::<()>(&cmd).await
    }
}

/// The location from `locate.lua`'s answer.
fn parse_location(reply: Value) -> Option<Location> {
    let Value::Array(items) = reply else {
        return None;
    };
    Some(match items.as_slice() {
        [Value::Int(0)] => Location::Unknown,
        [Value::Int(1)] => Location::Here,
        [Value::Int(2), Value::BulkString(node)] => Location::Elsewhere {
            node: String::from_utf8(node.clone()).ok()?,
        },
        [Value::Int(3), Value::Int(generation)] => Location::TakenOver {
            generation: u64::try_from(*generation).ok()?,
        },
        _ => return None,
    })
}

fn logged(what: &'static str, result: Result<(), Error>) {
    if let Err(error) = result {
        tracing::warn!(%error, "redis cluster: {what} failed");
    }
}

impl Cluster for RedisCluster {
    fn node(&self) -> &str {
        self.backend.node()
    }

    fn hold<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.hold(session).await?) })
    }

    fn locate<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<Location, StoreError>> {
        Box::pin(async move { Ok(self.locate(session).await?) })
    }

    fn release<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move { logged("release", self.release(session).await) })
    }

    fn forward<'a>(
        &'a self,
        node: &'a str,
        envelope: Bytes,
    ) -> StoreFuture<'a, Result<Bytes, StoreError>> {
        Box::pin(async move { Ok(forward::forward(&self.backend.shared, node, envelope).await?) })
    }

    fn inbox(&self) -> Option<mpsc::Receiver<Forwarded>> {
        self.backend.shared.take_inbox()
    }

    fn written<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move { logged("written", self.written(session, stream).await) })
    }

    fn watch(&self, session: &str, holder: &str) -> Watch {
        let shared = &self.backend.shared;
        let (watch, first) = shared.watches.add(session, holder);
        if first {
            shared.subscriptions_changed.notify_one();
        }
        watch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_read_from_the_script_and_nothing_else() {
        let array = |items: Vec<Value>| Value::Array(items);
        assert_eq!(
            parse_location(array(vec![Value::Int(0)])),
            Some(Location::Unknown)
        );
        assert_eq!(
            parse_location(array(vec![Value::Int(2), Value::BulkString(b"n".to_vec())])),
            Some(Location::Elsewhere { node: "n".into() })
        );
        assert_eq!(
            parse_location(array(vec![Value::Int(3), Value::Int(4)])),
            Some(Location::TakenOver { generation: 4 })
        );
        assert_eq!(
            parse_location(array(vec![Value::Int(3), Value::Int(-1)])),
            None
        );
        assert_eq!(parse_location(array(vec![Value::Int(2)])), None);
        assert_eq!(parse_location(Value::Nil), None);
    }
}
