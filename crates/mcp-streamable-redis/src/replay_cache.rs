//! DPoP's replay cache on Redis (feature `dpop`): a proof accepted on one node is refused on
//! every other, as RFC 9449 §11.1 asks of a resource server that runs as several.

use std::sync::Arc;
use std::time::Duration;

use mcp_streamable_auth::ReplayError;
use mcp_streamable_auth::dpop::{ProofId, ReplayCache, ReplayFuture};
use redis::Value;

use crate::error::Error;
use crate::lease::Keeper;
use crate::node::Node;

/// The [`ReplayCache`] of a [`RedisBackend`](crate::RedisBackend) (feature `dpop`): every
/// node on the same Redis and prefix refuses a DPoP proof any of them accepted.
///
/// One command per proof, `SET P:dpop:{ID} 1 NX PX TTL`, which Redis runs one at a time, so two
/// nodes given the same proof at once cannot both see it first. A proof's key lives as long as
/// the guard would take the proof (its age and clock skew), then goes by itself: Redis holds
/// about 100 bytes per proof of the last minute. When Redis does not answer within the command
/// timeout, the guard answers 503 rather than let a proof through that might be a replay; Redis
/// may still record it once it answers again, so that proof is spent (a client makes a new
/// proof for each try anyway).
///
/// ```no_run
/// use mcp_streamable_auth::dpop;
/// use mcp_streamable_redis::{Options, RedisBackend};
///
/// # async fn run() -> Result<(), mcp_streamable_redis::Error> {
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/", Options::default()).await?;
/// let config = dpop::Config::default().replay_cache(backend.replay_cache());
/// # let _ = config;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RedisReplayCache {
    node: Arc<Node>,
    _keeper: Arc<Keeper>,
}

impl RedisReplayCache {
    pub(crate) fn new(node: Arc<Node>, keeper: Arc<Keeper>) -> Self {
        RedisReplayCache {
            node,
            _keeper: keeper,
        }
    }

    async fn first_use(&self, id: &ProofId, ttl: Duration) -> Result<bool, Error> {
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut set = redis::cmd("SET");
        set.arg(self.node.keys.proof(id.as_bytes()))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(ms);
        let reply: Value = self.node.query(&set).await?;
        Ok(matches!(reply, Value::Okay))
    }
}

impl ReplayCache for RedisReplayCache {
    fn first_use<'a>(&'a self, id: &'a ProofId, ttl: Duration) -> ReplayFuture<'a> {
        Box::pin(async move {
            RedisReplayCache::first_use(self, id, ttl)
                .await
                .map_err(|e| ReplayError::new().with_source(e))
        })
    }
}
