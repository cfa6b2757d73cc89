//! A throwaway Redis for tests (feature `testing`).
//!
//! ```no_run
//! use mcp_streamable_redis::testing::RedisServer;
//!
//! let redis = RedisServer::start().expect("redis-server");
//! let url = redis.url();
//! # let _ = url;
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
}

impl RedisServer {
    /// Starts one on a port the OS picks, and waits until it answers PING.
    ///
    /// Fails with a message saying what to install if `redis-server` is not on `PATH`.
    pub fn start() -> io::Result<Self> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let dir = std::env::temp_dir().join(format!("mcp-redis-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)?;
        let mut server = RedisServer {
            port,
            dir,
            child: None,
        };
        server.spawn()?;
        Ok(server)
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
            let _ = child.kill();
            let _ = child.wait();
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
