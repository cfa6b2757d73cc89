//! The interop pairs of several nodes: our echo server as two nodes sharing a Redis of the
//! pair's own (`echo_server --redis URL --node a|b`), and a client told both nodes' URLs and the
//! first one's process id, which it kills mid-stream (the `failover` scenario of
//! `interop/ts/client.mjs`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::peer::{self, Process, Server};

/// How long Redis may take to answer its first PING.
const REDIS_START_TIMEOUT: Duration = Duration::from_secs(10);

/// A `redis-server` on a free loopback port, keeping nothing on disk; killed when dropped.
pub(crate) struct Redis {
    _process: Process,
    port: u16,
}

impl Redis {
    pub(crate) fn start(dir: &Path) -> Result<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir);
        let process = peer::spawn(command, &dir.join("redis.out"), &dir.join("redis.err"))
            .context("redis-server (Debian's redis-server; `cargo xtask ci` installs it)")?;
        let deadline = Instant::now() + REDIS_START_TIMEOUT;
        loop {
            let pong = Command::new("redis-cli")
                .args(["-p", &port.to_string(), "ping"])
                .output()
                .is_ok_and(|out| out.stdout.starts_with(b"PONG"));
            if pong {
                return Ok(Redis {
                    _process: process,
                    port,
                });
            }
            if Instant::now() >= deadline {
                bail!("redis-server answered no PING in {REDIS_START_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

/// Two echo server nodes on `redis`, `a` and `b`, started with `command` (a fresh one each).
pub(crate) fn start_nodes(
    redis: &Redis,
    command: impl Fn() -> Command,
    dir: &Path,
) -> Result<(Server, Server)> {
    let node = |name: &str| {
        let mut command = command();
        command.args(["--redis", &redis.url(), "--node", name]);
        Server::start(
            command,
            &dir.join(format!("server-{name}.out")),
            &dir.join(format!("server-{name}.err")),
            peer::SERVER_START_TIMEOUT,
        )
        .with_context(|| format!("node {name} did not start"))
    };
    Ok((node("a")?, node("b")?))
}
