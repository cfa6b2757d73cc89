//! The connections to Redis: one multiplexed connection to a single Redis, or a cluster
//! connection to a Redis Cluster (which routes each command to the slot of its first key);
//! every call bounded by the command timeout.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{
    Cmd, ErrorKind, FromRedisValue, Pipeline, ProtocolVersion, PushInfo, RedisFuture,
    ServerErrorKind, Value,
};
use tokio::sync::mpsc::UnboundedSender;

use crate::error::{Error, Kind};
use crate::scripts::Call;

/// Where the backend's Redis is.
#[derive(Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per node, made once: boxing the cluster's client would save nothing"
)]
pub(crate) enum Target {
    Single(redis::Client),
    /// The cluster's client, and the nodes it was made from (a subscriber makes its own).
    Cluster(ClusterClient, Vec<String>),
}

impl Target {
    /// A single Redis at `url`.
    pub(crate) fn single(url: &str) -> Result<Target, Error> {
        redis::Client::open(url)
            .map(Target::Single)
            .map_err(Error::redis)
    }

    /// A Redis Cluster, from any of its `nodes`.
    pub(crate) fn cluster(nodes: &[&str], timeout: Duration) -> Result<Target, Error> {
        let nodes: Vec<String> = nodes.iter().map(|n| (*n).to_owned()).collect();
        ClusterClient::builder(nodes.clone())
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .retries(2)
            .build()
            .map(|client| Target::Cluster(client, nodes))
            .map_err(Error::redis)
    }

    /// A connection subscribed to `channel` (sharded on a cluster), whose messages, and word of
    /// its disconnections and subscriptions, go to `pushes`; it reconnects and subscribes again
    /// by itself. Held for as long as the subscription is wanted.
    pub(crate) async fn subscriber(
        &self,
        channel: &str,
        pushes: UnboundedSender<PushInfo>,
        timeout: Duration,
    ) -> Result<Subscriber, Error> {
        match self {
            Target::Single(client) => {
                let info = client.get_connection_info().clone();
                let settings = info
                    .redis_settings()
                    .clone()
                    .set_protocol(ProtocolVersion::RESP3);
                let client =
                    redis::Client::open(info.set_redis_settings(settings)).map_err(Error::redis)?;
                let config = ConnectionManagerConfig::new()
                    .set_response_timeout(Some(timeout))
                    .set_connection_timeout(Some(timeout))
                    .set_max_delay(Duration::from_millis(500))
                    .set_push_sender(pushes)
                    .set_automatic_resubscription();
                let connecting = ConnectionManager::new_with_config(client, config);
                let mut conn = within(timeout * 2, connecting).await?;
                within(timeout, conn.subscribe(channel)).await?;
                Ok(Subscriber::Single(conn))
            }
            Target::Cluster(_, nodes) => {
                let client = ClusterClient::builder(nodes.clone())
                    .connection_timeout(timeout)
                    .response_timeout(timeout)
                    .use_protocol(ProtocolVersion::RESP3)
                    .push_sender(pushes)
                    .build()
                    .map_err(Error::redis)?;
                let mut conn = within(timeout * 2, client.get_async_connection()).await?;
                within(timeout, conn.ssubscribe(channel)).await?;
                Ok(Subscriber::Cluster(conn))
            }
        }
    }

    /// A command connection, reconnecting by itself; it fails if Redis does not answer within
    /// `timeout`.
    pub(crate) async fn connect(&self, timeout: Duration) -> Result<Conn, Error> {
        match self {
            Target::Single(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_response_timeout(Some(timeout))
                    .set_connection_timeout(Some(timeout))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_millis(500));
                let connecting = ConnectionManager::new_with_config(client.clone(), config);
                within(timeout * 2, connecting).await.map(Conn::Single)
            }
            Target::Cluster(client, _) => within(timeout * 2, client.get_async_connection())
                .await
                .map(Conn::Cluster),
        }
    }
}

/// A subscribed connection: dropped, it unsubscribes.
#[expect(dead_code, reason = "held for its subscription, never read")]
pub(crate) enum Subscriber {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

/// A command connection: cheap to clone, every clone multiplexed on one connection (per
/// master, on a cluster).
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(conn) => conn.req_packed_command(cmd),
            Conn::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(conn) => conn.get_db(),
            Conn::Cluster(conn) => conn.get_db(),
        }
    }
}

impl Conn {
    /// Runs `cmd`, failing after `timeout`.
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        timeout: Duration,
    ) -> Result<T, Error> {
        let mut conn = self.clone();
        within(timeout, cmd.query_async(&mut conn)).await
    }

    /// Runs a Lua script, failing after `timeout`; loads it first if Redis does not know it
    /// (a Redis restarted, or a new one).
    pub(crate) async fn script(&self, call: &Call, timeout: Duration) -> Result<Value, Error> {
        let mut conn = self.clone();
        within(timeout, async {
            match call.cmd().query_async(&mut conn).await {
                Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                    call.script().load_async(&mut conn).await?;
                    call.cmd().query_async(&mut conn).await
                }
                answer => answer,
            }
        })
        .await
    }
}

/// `call`, failing with a timeout after `limit`.
pub(crate) async fn within<T>(
    limit: Duration,
    call: impl Future<Output = redis::RedisResult<T>>,
) -> Result<T, Error> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(Error::redis(error)),
        Err(_) => Err(Error::new(Kind::Timeout)),
    }
}
