//! One node's backend: its two connections, its background tasks, and the three seams that
//! share them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_streamable_server::Forwarded;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, Value};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::cluster::RedisCluster;
use crate::error::{Error, Kind};
use crate::event_store::RedisEventStore;
use crate::forward::Forwards;
use crate::keys::Keys;
use crate::options::Options;
use crate::session_store::RedisSessionStore;
use crate::watches::Watches;
use crate::{lease, pubsub};

/// A node's connections to Redis and its background tasks, shared by the
/// [`event_store`](RedisBackend::event_store), the [`session_store`](RedisBackend::session_store)
/// and the [`cluster`](RedisBackend::cluster) it hands out.
///
/// Cheap to clone: clones share everything. The background tasks (lease renewal, the pub/sub
/// reader, the liveness poller) stop when the last clone, and the last seam handed out, is
/// dropped; the node's lease then lapses as if the process had died.
///
/// ```no_run
/// use mcp_streamable_redis::{Options, RedisBackend};
/// use mcp_streamable_server::Config;
///
/// # async fn run() -> Result<(), mcp_streamable_redis::Error> {
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/", Options::default()).await?;
/// let config = Config::default()
///     .session_store(backend.session_store())
///     .event_store(backend.event_store())
///     .cluster(backend.cluster());
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisBackend {
    pub(crate) shared: Arc<Shared>,
    _tasks: Arc<Tasks>,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("node", &self.shared.options.node)
            .field("prefix", &self.shared.options.prefix)
            .finish_non_exhaustive()
    }
}

/// What the seams and the background tasks share.
pub(crate) struct Shared {
    pub(crate) options: Options,
    pub(crate) keys: Keys,
    pub(crate) client: redis::Client,
    conn: ConnectionManager,
    pub(crate) watches: Watches,
    pub(crate) forwards: Forwards,
    pub(crate) inbox: Mutex<Option<mpsc::Receiver<Forwarded>>>,
    /// Wakes the pub/sub task when the set of watched sessions changed.
    pub(crate) subscriptions_changed: Notify,
}

/// Aborts the background tasks when the last handle goes.
struct Tasks(Vec<AbortHandle>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl RedisBackend {
    /// Connects to the Redis at `url` (`redis://host:port/db`), takes this node's lease and
    /// subscribes to its inbox. Fails if Redis does not answer within the command timeout.
    ///
    /// Must be called within a tokio runtime: the background tasks are spawned on it.
    pub async fn connect(url: &str, options: Options) -> Result<Self, Error> {
        let client = redis::Client::open(url).map_err(Error::redis)?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(options.command_timeout))
            .set_connection_timeout(Some(options.command_timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let conn = within(
            options.command_timeout * 2,
            ConnectionManager::new_with_config(client.clone(), config),
        )
        .await?;
        let (inbox_tx, inbox_rx) = mpsc::channel(options.inbox_capacity);
        let shared = Arc::new(Shared {
            keys: Keys::new(&options.prefix),
            forwards: Forwards::new(inbox_tx, options.max_pending_forwards),
            watches: Watches::default(),
            inbox: Mutex::new(Some(inbox_rx)),
            subscriptions_changed: Notify::new(),
            client,
            conn,
            options,
        });
        lease::renew(&shared).await?;
        let (ready_tx, ready_rx) = oneshot::channel();
        let tasks = Tasks(vec![
            tokio::spawn(pubsub::run(Arc::clone(&shared), ready_tx)).abort_handle(),
            tokio::spawn(lease::keep(Arc::clone(&shared))).abort_handle(),
            tokio::spawn(lease::watch_holders(Arc::clone(&shared))).abort_handle(),
        ]);
        // The inbox must be subscribed before anyone is told of this node.
        match tokio::time::timeout(shared.options.command_timeout * 2, ready_rx).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(error))) => return Err(error),
            Ok(Err(_)) => return Err(Error::new(Kind::Redis)),
            Err(_) => return Err(Error::new(Kind::Timeout)),
        }
        Ok(RedisBackend {
            shared,
            _tasks: Arc::new(tasks),
        })
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.shared.options.node
    }

    /// The [`EventStore`](mcp_streamable_server::EventStore) on this backend.
    pub fn event_store(&self) -> RedisEventStore {
        RedisEventStore::new(self.clone())
    }

    /// The [`SessionStore`](mcp_streamable_server::SessionStore) on this backend.
    pub fn session_store(&self) -> RedisSessionStore {
        RedisSessionStore::new(self.clone())
    }

    /// The [`Cluster`](mcp_streamable_server::Cluster) on this backend.
    pub fn cluster(&self) -> RedisCluster {
        RedisCluster::new(self.clone())
    }
}

impl Shared {
    /// Runs `cmd` on the shared command connection, failing after the command timeout.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, Error> {
        let mut conn = self.conn.clone();
        within(self.options.command_timeout, cmd.query_async(&mut conn)).await
    }

    /// Runs `pipe` (one round trip) on the shared command connection.
    pub(crate) async fn pipe<T: FromRedisValue>(&self, pipe: &redis::Pipeline) -> Result<T, Error> {
        let mut conn = self.conn.clone();
        within(self.options.command_timeout, pipe.query_async(&mut conn)).await
    }

    /// Runs a Lua script on the shared command connection.
    pub(crate) async fn script(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<Value, Error> {
        let mut conn = self.conn.clone();
        within(
            self.options.command_timeout,
            invocation.invoke_async(&mut conn),
        )
        .await
    }

    /// The inbox, the first time it is asked for.
    pub(crate) fn take_inbox(&self) -> Option<mpsc::Receiver<Forwarded>> {
        self.inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
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
