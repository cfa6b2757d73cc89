//! What the tests share: a Redis of their own, nodes on it, and a raw look at its keys.

use std::time::Duration;

use mcp_streamable_redis::testing::RedisServer;
use mcp_streamable_redis::{Options, RedisBackend};

/// How long a test waits for something that happens by itself (a lapse, a reconnection).
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// How often it looks while it waits.
pub(crate) const POLL: Duration = Duration::from_millis(20);

pub(crate) fn redis() -> RedisServer {
    RedisServer::start().expect("could not start redis-server")
}

/// A node on `redis`, named `node`, with a short lease so that lapses come quickly.
pub(crate) async fn node(redis: &RedisServer, node: &str, options: Options) -> RedisBackend {
    let options = options.node(node);
    RedisBackend::connect(&redis.url(), options)
        .await
        .expect("could not connect to the test's redis")
}

/// Options for tests: a lease short enough that lapses come quickly.
pub(crate) fn options() -> Options {
    Options::default()
        .prefix("t")
        .lease(Duration::from_millis(300))
        .command_timeout(Duration::from_millis(500))
        .forward_timeout(Duration::from_secs(5))
}

/// A plain connection to `redis`, to look at what the backend wrote.
pub(crate) async fn raw(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The keys matching `pattern`, sorted.
pub(crate) async fn keys(
    conn: &mut redis::aio::MultiplexedConnection,
    pattern: &str,
) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(pattern)
        .query_async(conn)
        .await
        .unwrap();
    keys.sort();
    keys
}

/// Waits until `check` holds, looking every [`POLL`], at most [`PATIENCE`]; panics with `what`
/// if it never does.
pub(crate) async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let tries = PATIENCE.as_millis() / POLL.as_millis();
    for _ in 0..tries {
        if check().await {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
    panic!("{what}: not within {PATIENCE:?}");
}
