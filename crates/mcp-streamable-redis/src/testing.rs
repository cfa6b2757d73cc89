//! A throwaway Redis, or Redis Cluster, for tests (feature `testing`).
//!
//! ```no_run
//! use mcp_streamable_redis::testing::{RedisCluster, RedisServer};
//!
//! let redis = RedisServer::start().expect("redis-server");
//! let url = redis.url();
//! let cluster = RedisCluster::start().expect("three redis-servers in cluster mode");
//! let urls = cluster.urls();
//! # let _ = (url, urls);
//! ```

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started server may take to answer PING.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How often PING is tried while it starts.
const PING_INTERVAL: Duration = Duration::from_millis(20);

/// A `redis-server` of its own, on a free loopback port, keeping nothing on disk beyond a
/// temporary directory of its own; killed (and the directory removed) on drop.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// More arguments of `redis-server` (cluster mode).
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts one on a port the OS picks, and waits until it answers PING.
    ///
    /// Fails with a message saying what to install if `redis-server` is not on `PATH`.
    pub fn start() -> io::Result<Self> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        Self::start_on(port, Vec::new())
    }

    fn start_on(port: u16, extra: Vec<String>) -> io::Result<Self> {
        let dir = std::env::temp_dir().join(format!("mcp-redis-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)?;
        let mut server = RedisServer {
            port,
            dir,
            child: None,
            extra,
        };
        server.spawn()?;
        Ok(server)
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills it and waits for it to exit. Nothing is kept: a restart starts empty.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A frozen process dies of SIGKILL all the same.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes it (`SIGSTOP`): connections stay open and nothing is answered, as when Redis is
    /// slow or the network drops packets. [`thaw`](RedisServer::thaw) undoes it.
    pub fn freeze(&self) -> io::Result<()> {
        self.signal("-STOP")
    }

    /// Lets a frozen server answer again (`SIGCONT`).
    pub fn thaw(&self) -> io::Result<()> {
        self.signal("-CONT")
    }

    fn signal(&self, signal: &str) -> io::Result<()> {
        let Some(child) = &self.child else {
            return Err(io::Error::other("redis-server is stopped"));
        };
        let status = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("kill {signal} failed: {status}")))
        }
    }

    /// Stops it, then starts it again on the same port.
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        self.spawn()
    }

    fn spawn(&mut self) -> io::Result<()> {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| match error.kind() {
                io::ErrorKind::NotFound => io::Error::new(
                    io::ErrorKind::NotFound,
                    "redis-server is not installed: install Redis 7 (on Debian, `apt-get install \
                     -y --no-install-recommends redis-server`; `cargo xtask ci` does it)",
                ),
                _ => error,
            })?;
        self.child = Some(child);
        self.wait_for_ping()
    }

    fn wait_for_ping(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        let attempts = START_TIMEOUT.as_millis() / PING_INTERVAL.as_millis();
        for _ in 0..attempts {
            if ping(self.port).is_ok() {
                return Ok(());
            }
            if let Some(child) = &mut self.child
                && let Some(status) = child.try_wait()?
            {
                self.child = None;
                return Err(io::Error::other(format!(
                    "redis-server on port {} exited at start: {status}",
                    self.port
                )));
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(PING_INTERVAL);
        }
        self.stop();
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("redis-server on port {} did not answer PING", self.port),
        ))
    }
}

/// How long a new Redis Cluster may take to settle (every slot served, every node agreeing).
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(30);

/// A Redis Cluster of three masters (no replicas), each a [`RedisServer`] of its own on a free
/// loopback port, made with `redis-cli --cluster create`; stopped (every server, by its pid) on
/// drop.
#[derive(Debug)]
pub struct RedisCluster {
    servers: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts three `redis-server`s in cluster mode, makes them one cluster, and waits until it
    /// serves every slot.
    pub fn start() -> io::Result<Self> {
        let mut servers = Vec::with_capacity(3);
        for _ in 0..3 {
            let port = cluster_port()?;
            let extra = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ]
            .into_iter()
            .chain(["--cluster-node-timeout", "2000"])
            .map(str::to_owned)
            .collect();
            servers.push(RedisServer::start_on(port, extra)?);
        }
        let addresses: Vec<String> = servers
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()?;
        if !created.status.success() {
            return Err(io::Error::other(format!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&created.stdout)
            )));
        }
        let cluster = RedisCluster { servers };
        cluster.wait_until_settled()?;
        Ok(cluster)
    }

    /// The URLs of its nodes, for [`RedisBackend::connect_cluster`](crate::RedisBackend::connect_cluster).
    pub fn urls(&self) -> Vec<String> {
        self.servers.iter().map(RedisServer::url).collect()
    }

    /// Its servers.
    pub fn servers(&self) -> &[RedisServer] {
        &self.servers
    }

    fn wait_until_settled(&self) -> io::Result<()> {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        let attempts = CLUSTER_TIMEOUT.as_millis() / 100;
        for _ in 0..attempts {
            let settled = self.servers.iter().all(|server| {
                Command::new("redis-cli")
                    .args(["-p", &server.port().to_string(), "cluster", "info"])
                    .output()
                    .is_ok_and(|out| {
                        String::from_utf8_lossy(&out.stdout).contains("cluster_state:ok")
                    })
            });
            if settled {
                return Ok(());
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the Redis Cluster did not settle",
        ))
    }
}

/// A free loopback port whose cluster bus port (10000 above it) is free too.
fn cluster_port() -> io::Result<u16> {
    for _ in 0..100 {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        if port < 55_535 && TcpListener::bind((Ipv4Addr::LOCALHOST, port + 10_000)).is_ok() {
            return Ok(port);
        }
    }
    Err(io::Error::other("no free port pair for a cluster node"))
}

fn ping(port: u16) -> io::Result<()> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
    stream.set_read_timeout(Some(Duration::from_millis(500)))?;
    stream.write_all(b"PING\r\n")?;
    let mut reply = [0; 7];
    stream.read_exact(&mut reply)?;
    if &reply == b"+PONG\r\n" {
        Ok(())
    } else {
        Err(io::Error::other("not a PONG"))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
