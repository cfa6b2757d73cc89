//! The [`RateStore`] on Redis: a client's rate-limit buckets shared by every node, charged in
//! one script on Redis's clock.

use std::sync::Arc;
use std::time::Duration;

use mcp_streamable_server::{Bucket, RateError, RateFuture, RateStore};
use redis::Value;

use crate::error::{Error, Kind};
use crate::lease::Keeper;
use crate::node::Node;
use crate::scripts::{self, Call};

/// The [`RateStore`] of a [`RedisBackend`](crate::RedisBackend): a client's quotas
/// ([`RateLimit`](mcp_streamable_server::RateLimit)) hold across every node on the same Redis
/// and prefix, not per node.
///
/// One script per POST, on the client's slot, with Redis's clock (`TIME`), so that the nodes'
/// clocks do not matter. A bucket is one string (`P:rl:{CLIENT}:NAME`), kept until it has
/// refilled. When Redis cannot be reached within the command timeout, the server lets the
/// request through and logs it.
///
/// ```no_run
/// use mcp_streamable_redis::{Options, RedisBackend};
/// use mcp_streamable_server::{Config, Quota, RateLimit};
///
/// # async fn run() -> Result<(), mcp_streamable_redis::Error> {
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/", Options::default()).await?;
/// let limits = RateLimit::new()
///     .requests(Quota::per_second(50).burst(100))
///     .store(backend.rate_store());
/// let config = Config::default().cluster(backend.cluster()).rate_limit(limits);
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RedisRateStore {
    node: Arc<Node>,
    _keeper: Arc<Keeper>,
}

impl RedisRateStore {
    pub(crate) fn new(node: Arc<Node>, keeper: Arc<Keeper>) -> Self {
        RedisRateStore {
            node,
            _keeper: keeper,
        }
    }

    async fn charge(&self, buckets: &[Bucket<'_>]) -> Result<Option<Duration>, Error> {
        let keys: Vec<String> = buckets
            .iter()
            .map(|bucket| self.node.keys.rate(bucket.client, bucket.name))
            .collect();
        let mut call = Call::new(&scripts::RATE, &keys);
        for bucket in buckets {
            let interval = u64::try_from(bucket.quota.interval().as_micros()).unwrap_or(u64::MAX);
            call.arg(interval)
                .arg(bucket.quota.burst_size())
                .arg(bucket.cost);
        }
        match self.node.script(&call).await? {
            Value::Int(0) => Ok(None),
            Value::Int(wait) if wait > 0 => Ok(Some(Duration::from_micros(wait.unsigned_abs()))),
            _ => Err(Error::new(Kind::Malformed)),
        }
    }
}

impl RateStore for RedisRateStore {
    fn charge<'a>(&'a self, buckets: &'a [Bucket<'a>]) -> RateFuture<'a> {
        Box::pin(async move {
            RedisRateStore::charge(self, buckets)
                .await
                .map_err(RateError::new)
        })
    }
}
