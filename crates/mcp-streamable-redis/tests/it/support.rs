//! What the tests share: a Redis, or a Redis Cluster, of their own; nodes on it; a raw look at
//! its keys.

use std::time::Duration;

use mcp_streamable_redis::testing::{RedisCluster, RedisServer};
use mcp_streamable_redis::{Options, RedisBackend};

/// How long a test waits for something that happens by itself (a lapse, a reconnection).
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// How often it looks while it waits.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// The lease of the tests' nodes: short, so that lapses come quickly.
pub(crate) const LEASE: Duration = Duration::from_millis(300);

/// Runs a test on one Redis and on a Redis Cluster of three, as two tests.
macro_rules! on_both {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_redis() {
                super::$name(crate::support::Redis::single()).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_a_redis_cluster() {
                super::$name(crate::support::Redis::cluster()).await;
            }
        }
    };
}
pub(crate) use on_both;

/// A Redis of the test's own: one server, or a cluster of three.
#[derive(Debug)]
pub(crate) enum Redis {
    Single(RedisServer),
    Cluster(RedisCluster),
}

impl Redis {
    pub(crate) fn single() -> Redis {
        Redis::Single(RedisServer::start().expect("could not start redis-server"))
    }

    pub(crate) fn cluster() -> Redis {
        Redis::Cluster(RedisCluster::start().expect("could not start a Redis Cluster"))
    }

    /// The one server (panics on a cluster: for tests of one Redis only).
    pub(crate) fn server(&mut self) -> &mut RedisServer {
        match self {
            Redis::Single(server) => server,
            Redis::Cluster(_) => panic!("not one Redis"),
        }
    }

    /// A node on it, named `node`.
    pub(crate) async fn node(&self, node: &str, options: Options) -> RedisBackend {
        let options = options.node(node);
        let backend = match self {
            Redis::Single(server) => RedisBackend::connect(&server.url(), options).await,
            Redis::Cluster(cluster) => {
                let urls = cluster.urls();
                let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
                RedisBackend::connect_cluster(&urls, options).await
            }
        };
        backend.expect("could not connect to the test's redis")
    }

    fn ports(&self) -> Vec<u16> {
        match self {
            Redis::Single(server) => vec![server.port()],
            Redis::Cluster(cluster) => cluster.servers().iter().map(|s| s.port()).collect(),
        }
    }

    /// The keys matching `pattern`, on every server, sorted.
    pub(crate) fn keys(&self, pattern: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .ports()
            .into_iter()
            .flat_map(|port| {
                cli(port, &["--scan", "--pattern", pattern])
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|k| !k.is_empty())
            .collect();
        keys.sort();
        keys
    }

    /// `redis-cli` with `args`, about keys of one slot: on a cluster it follows the
    /// redirection to the slot's server.
    pub(crate) fn cli(&self, args: &[&str]) -> String {
        match self {
            Redis::Single(server) => cli(server.port(), args),
            Redis::Cluster(cluster) => {
                let args: Vec<&str> = std::iter::once("-c").chain(args.iter().copied()).collect();
                cli(cluster.servers()[0].port(), &args)
            }
        }
    }
}

fn cli(port: u16, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Options for tests: a lease short enough that lapses come quickly.
pub(crate) fn options() -> Options {
    Options::default()
        .prefix("t")
        .lease(LEASE)
        .command_timeout(Duration::from_millis(500))
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
