//! The factory: one node's connection to Redis, its lease, and the three seams that share them.

use std::sync::{Arc, Mutex};

use mcp_streamable_server::Lease;

use crate::cluster::RedisCluster;
use crate::connection::Target;
use crate::error::{Error, Kind};
use crate::event_store::RedisEventStore;
use crate::keys::Keys;
use crate::lease::{self, Keeper};
use crate::members::Members;
use crate::node::Node;
use crate::notification_bus::RedisNotificationBus;
use crate::options::Options;
use crate::rate_store::RedisRateStore;
use crate::scripts::{self, Call};
use crate::session_store::RedisSessionStore;

/// A node's connection to Redis, its lease and its place among the nodes, shared by the
/// [`event_store`](RedisBackend::event_store), the [`session_store`](RedisBackend::session_store)
/// and the [`cluster`](RedisBackend::cluster) it hands out.
///
/// Cheap to clone: clones share everything. The lease is kept on a thread of its own, until the
/// last clone, and the last seam handed out, is dropped; the node then leaves the membership,
/// and its sessions go on elsewhere.
///
/// ```no_run
/// use mcp_streamable_redis::{Options, RedisBackend};
/// use mcp_streamable_server::Config;
///
/// # async fn run() -> Result<(), mcp_streamable_redis::Error> {
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/", Options::default()).await?;
/// let config = Config::default().cluster(backend.cluster());
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisBackend {
    node: Arc<Node>,
    keeper: Arc<Keeper>,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("node", &self.node.options.node)
            .field("prefix", &self.node.options.prefix)
            .field("address", &self.node.address)
            .field("peer_addr", &self.node.peer_addr)
            .finish_non_exhaustive()
    }
}

impl RedisBackend {
    /// Connects to the Redis at `url` (`redis://host:port/db`), listens for the other nodes at
    /// [`peer_addr`](Options::peer_addr), and joins the nodes: registers this node as a new
    /// incarnation, with the address the others reach it at, and keeps its lease from then on.
    /// Fails if Redis does not answer within the command timeout, or the address cannot be
    /// listened on.
    ///
    /// Must be called within a tokio runtime.
    pub async fn connect(url: &str, options: Options) -> Result<Self, Error> {
        let target = Target::single(url)?;
        Self::join(target, options).await
    }

    /// Connects to the Redis Cluster of which `nodes` are some nodes (`redis://host:port`), as
    /// [`connect`](RedisBackend::connect) does to one Redis. Each session's keys sit in one slot
    /// (its id is their hash tag), the membership's in one of their own.
    pub async fn connect_cluster(nodes: &[&str], options: Options) -> Result<Self, Error> {
        let target = Target::cluster(nodes, options.command_timeout)?;
        Self::join(target, options).await
    }

    async fn join(target: Target, options: Options) -> Result<Self, Error> {
        let conn = target.connect(options.command_timeout).await?;
        let listener = std::net::TcpListener::bind(options.peer_addr).map_err(Error::listen)?;
        let bound = listener.local_addr().map_err(Error::listen)?;
        let address = match options.advertise {
            Some(address) if address.port() == 0 => {
                std::net::SocketAddr::new(address.ip(), bound.port())
            }
            Some(address) => address,
            None => bound,
        };
        if address.ip().is_unspecified() {
            return Err(Error::listen(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{address} is no address the other nodes can reach: give one with Options::advertise"
                ),
            )));
        }
        let keys = Keys::new(&options.prefix);
        let secret = match &options.secret {
            Some(secret) => secret.clone(),
            None => shared_secret(&conn, &keys, &options).await?,
        };
        let node = Arc::new(Node {
            keys,
            target,
            conn,
            lease: Lease::new(),
            members: Members::default(),
            secret,
            address,
            peer_addr: bound,
            listener: Mutex::new(Some(listener)),
            options,
        });
        let incarnation = lease::register(&node, &node.conn, node.options.command_timeout).await?;
        let keeper = lease::keep(Arc::clone(&node), incarnation).map_err(Error::listen)?;
        Ok(RedisBackend {
            node,
            keeper: Arc::new(keeper),
        })
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.node.options.node
    }

    /// Where the other nodes reach this one.
    pub fn address(&self) -> std::net::SocketAddr {
        self.node.address
    }

    /// Where this node listens for the other nodes: the address its listener is bound to, with
    /// the port picked when [`Options::peer_addr`] asked for port 0. The same as
    /// [`address`](RedisBackend::address) unless [`Options::advertise`] told the others another
    /// address (behind NAT, a proxy, or a listener bound to `0.0.0.0`).
    pub fn peer_addr(&self) -> std::net::SocketAddr {
        self.node.peer_addr
    }

    /// The [`EventStore`](mcp_streamable_server::EventStore) on this backend.
    pub fn event_store(&self) -> RedisEventStore {
        RedisEventStore::new(Arc::clone(&self.node), Arc::clone(&self.keeper))
    }

    /// The [`SessionStore`](mcp_streamable_server::SessionStore) on this backend.
    pub fn session_store(&self) -> RedisSessionStore {
        RedisSessionStore::new(Arc::clone(&self.node), Arc::clone(&self.keeper))
    }

    /// The [`RateStore`](mcp_streamable_server::RateStore) on this backend: give it to
    /// [`RateLimit::store`](mcp_streamable_server::RateLimit::store), and a client's quotas
    /// hold across all the nodes.
    pub fn rate_store(&self) -> RedisRateStore {
        RedisRateStore::new(Arc::clone(&self.node), Arc::clone(&self.keeper))
    }

    /// The DPoP [`ReplayCache`](mcp_streamable_auth::dpop::ReplayCache) on this backend
    /// (feature `dpop`): give it to `dpop::Config::replay_cache`, and a proof accepted on one
    /// node is refused on all.
    #[cfg(feature = "dpop")]
    #[cfg_attr(docsrs, doc(cfg(feature = "dpop")))]
    pub fn replay_cache(&self) -> crate::replay_cache::RedisReplayCache {
        crate::replay_cache::RedisReplayCache::new(Arc::clone(&self.node), Arc::clone(&self.keeper))
    }

    /// The [`NotificationBus`](mcp_streamable_server::NotificationBus) of the nodes on this
    /// backend: give it to this node's
    /// [`Subscriptions`](mcp_streamable_server::Subscriptions), and a change announced on any
    /// node reaches the listen streams of every node.
    pub fn notification_bus(&self) -> RedisNotificationBus {
        RedisNotificationBus::new(Arc::clone(&self.node), Arc::clone(&self.keeper))
    }

    /// The [`Cluster`](mcp_streamable_server::Cluster) on this backend, with its own event
    /// store and session store: give it to
    /// [`Config::cluster`](mcp_streamable_server::Config::cluster), which takes those too.
    pub fn cluster(&self) -> RedisCluster {
        RedisCluster::new(Arc::clone(&self.node), Arc::clone(&self.keeper))
    }
}

/// The key the nodes sign their forwards with, made by the first node and read by the others.
async fn shared_secret(
    conn: &crate::connection::Conn,
    keys: &Keys,
    options: &Options,
) -> Result<Vec<u8>, Error> {
    let fresh = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut call = Call::new(&scripts::SECRET, &[keys.secret()]);
    call.arg(fresh);
    match conn.script(&call, options.command_timeout).await? {
        redis::Value::BulkString(secret) => Ok(secret),
        _ => Err(Error::new(Kind::Malformed)),
    }
}
