//! Faults a deployment of several nodes meets, simulated for real: each node is an
//! `echo_server --redis` process, paused with SIGSTOP, resumed with SIGCONT, killed with
//! SIGKILL, restarted under its name; Redis restarted without its data. Every process a test
//! starts is killed by its pid when the test ends, however it ends.

mod chaos;
mod cut;
mod http;
mod pause;
mod restart;
mod store;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a node may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A pause long past a node's lease (1.5 s before the second design, 0.75 s after it): long
/// enough for another node to take its sessions over.
pub(crate) const PAST_THE_LEASE: Duration = Duration::from_millis(2600);

/// A command running the `echo_server` example, with none of the `MCP_*` variables of the
/// tests' own environment, which it would read as flags.
pub(crate) fn echo_server_command() -> Command {
    let mut command = Command::new(echo_server());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MCP_") {
            command.env_remove(name);
        }
    }
    command
}

/// The `echo_server` example, which `cargo test` builds beside the tests.
fn echo_server() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/it-HASH -> target/<profile>/examples/echo_server
    let path = exe
        .parent()
        .and_then(Path::parent)
        .map(|profile| profile.join("examples").join("echo_server"))
        .expect("a target directory");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p examples --example echo_server` \
         (`cargo test --workspace` builds it)",
        path.display()
    );
    path
}

/// A directory of the test's own for logs, removed when dropped.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub(crate) fn new(test: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mcp-faults-{test}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Kept when the test failed, for its logs.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// One node: an `echo_server` process on a Redis, killed (by its pid) when dropped.
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) addr: SocketAddr,
    child: Option<Child>,
    executions: PathBuf,
    log: PathBuf,
}

impl Node {
    /// Starts node `name` on the Redis at `redis`, with `extra` arguments, and waits for it to
    /// listen. Its log goes to `<name>.<n>.log` in `dir`; its executions log (the `count`
    /// tool's) to `<name>.executions`, kept across restarts.
    pub(crate) fn start(dir: &Path, redis: &str, name: &str, extra: &[&str]) -> Node {
        let debug = "info,mcp_streamable_server=debug,mcp_streamable_redis=debug";
        Node::start_logging(dir, redis, name, extra, debug)
    }

    /// [`start`](Self::start), logging what `rust_log` selects.
    pub(crate) fn start_logging(
        dir: &Path,
        redis: &str,
        name: &str,
        extra: &[&str],
        rust_log: &str,
    ) -> Node {
        let executions = dir.join(format!("{name}.executions"));
        let log = (0..)
            .map(|n| dir.join(format!("{name}.{n}.log")))
            .find(|p| !p.exists())
            .unwrap();
        let mut child = echo_server_command()
            .args(["--addr", "127.0.0.1:0", "--redis", redis, "--node", name])
            .arg("--executions-log")
            .arg(&executions)
            .args(extra)
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("echo_server starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            // Keeps reading, so that the node never blocks on a full pipe.
            for _ in lines {}
        });
        let line = match rx.recv_timeout(START_TIMEOUT) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "node {name} printed no address in {START_TIMEOUT:?}: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
        };
        let addr = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("node {name}'s first line: {line:?}"));
        Node {
            name: name.to_owned(),
            addr,
            child: Some(child),
            executions,
            log,
        }
    }

    fn signal(&self, signal: &str) {
        let Some(child) = &self.child else {
            panic!("node {} is not running", self.name);
        };
        let status = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} of node {}", self.name);
    }

    /// Freezes the process (SIGSTOP), as a VM pause or a long stall would.
    pub(crate) fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused process run again (SIGCONT).
    pub(crate) fn resume(&self) {
        self.signal("-CONT");
    }

    /// Kills the process at once (SIGKILL) and reaps it.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The keys the `count` tool recorded on this node (all its runs under this name).
    pub(crate) fn executions(&self) -> Vec<String> {
        std::fs::read_to_string(&self.executions)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_owned)
            .collect()
    }

    /// What this run of the node logged so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The process id, while it runs.
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Where this run of the node listens for its peers, as it logged before it printed its
    /// address (the log is written unbuffered, so it is there once [`start`](Self::start)
    /// returns).
    pub(crate) fn peer_addr(&self) -> SocketAddr {
        self.logged(LISTENING)
    }

    /// The address this run of the node tells the others to reach it at, as it logged.
    pub(crate) fn advertised(&self) -> SocketAddr {
        self.logged(REACHED)
    }

    fn logged(&self, label: &str) -> SocketAddr {
        let log = self.log();
        logged_addr(&log, label).unwrap_or_else(|| {
            panic!(
                "node {} logged no address after {label:?}: {log}",
                self.name
            )
        })
    }
}

/// What `echo_server --redis` logs at start: "reached by the other nodes at ADDR (listening for
/// them on ADDR)", the address it advertises, then the one it is bound to.
const REACHED: &str = "reached by the other nodes at ";
const LISTENING: &str = "(listening for them on ";

/// The address after `label` in a node's log, up to a space or a `)`.
fn logged_addr(log: &str, label: &str) -> Option<SocketAddr> {
    log.lines()
        .find_map(|line| line.split(label).nth(1))
        .and_then(|rest| rest.split([' ', ')']).next())
        .and_then(|addr| addr.parse().ok())
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A TCP proxy in front of a node's port for its peers: the node advertises the proxy, so that
/// every connection of another node to it goes through here, and a test can cut them all at
/// once, as a network does.
///
/// It listens before the node starts, so that the node can advertise it, and is told where to
/// pass connections ([`pass_to`](Self::pass_to)) once the node says which port it bound: no
/// port is probed and freed for the node to take later, which another process could take
/// first.
pub(crate) struct Cutter {
    pub(crate) addr: SocketAddr,
    /// Where connections are passed on: `None` until the node behind says where it listens.
    target: tokio::sync::watch::Sender<Option<SocketAddr>>,
    connections: Mutex<Vec<tokio::task::AbortHandle>>,
    /// While set, what the node sends back is dropped: its peers' requests reach it, its
    /// answers never come, as on a link that fails one way.
    muted: Arc<AtomicBool>,
}

impl Cutter {
    /// Listens on a loopback port, passing every connection on to where
    /// [`pass_to`](Self::pass_to) says.
    ///
    /// A connection arriving before that waits for it, for [`START_TIMEOUT`] at most, then is
    /// closed. Waiting rather than refusing: a peer can only have learnt the cutter's address
    /// from the node's registration, so the node is up and its port about to be set, and a
    /// refusal would be a fault the test did not ask for; the bound keeps a test that never
    /// sets it from hanging.
    pub(crate) async fn start() -> Arc<Cutter> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let cutter = Arc::new(Cutter {
            addr: listener.local_addr().unwrap(),
            target: tokio::sync::watch::Sender::new(None),
            connections: Mutex::new(Vec::new()),
            muted: Arc::new(AtomicBool::new(false)),
        });
        let weak = Arc::downgrade(&cutter);
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Some(cutter) = weak.upgrade() else {
                    return;
                };
                let muted = Arc::clone(&cutter.muted);
                let mut told = cutter.target.subscribe();
                let task = tokio::spawn(async move {
                    let set = told.wait_for(Option::is_some);
                    let target = match tokio::time::timeout(START_TIMEOUT, set).await {
                        Ok(Ok(target)) => *target,
                        _ => None,
                    };
                    let Some(target) = target else {
                        return;
                    };
                    if let Ok(outbound) = tokio::net::TcpStream::connect(target).await {
                        pass(inbound, outbound, &muted).await;
                    }
                });
                let mut connections = cutter.connections.lock().unwrap();
                connections.retain(|c| !c.is_finished());
                connections.push(task.abort_handle());
            }
        });
        cutter
    }

    /// Passes the connections arriving from now on (and those waiting) to `target`; those
    /// already passed on stay where they are.
    pub(crate) fn pass_to(&self, target: SocketAddr) {
        self.target.send_replace(Some(target));
    }

    /// From now on, drops whatever the node sends back.
    pub(crate) fn mute(&self) {
        self.muted.store(true, Ordering::SeqCst);
    }

    /// Cuts every connection through it now; returns how many there were.
    pub(crate) fn cut(&self) -> usize {
        let mut connections = self.connections.lock().unwrap();
        let live = connections.iter().filter(|c| !c.is_finished()).count();
        for connection in connections.drain(..) {
            connection.abort();
        }
        live
    }
}

/// Passes bytes both ways between `inbound` and `outbound` until either ends, dropping those
/// coming back while `muted`.
async fn pass(inbound: TcpStream, outbound: TcpStream, muted: &AtomicBool) {
    let (mut from_peer, mut to_peer) = inbound.into_split();
    let (mut from_node, mut to_node) = outbound.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut from_peer, &mut to_node).await;
        let _ = to_node.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0; 16 * 1024];
        while let Ok(n @ 1..) = from_node.read(&mut buf).await {
            if !muted.load(Ordering::SeqCst) && to_peer.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = to_peer.shutdown().await;
    };
    tokio::join!(up, down);
}

/// Node `name` on `redis`, its peers reaching it through a [`Cutter`] of its own.
pub(crate) async fn cut_node(
    dir: &Path,
    redis: &str,
    name: &str,
    extra: &[&str],
) -> (Node, Arc<Cutter>) {
    let cutter = Cutter::start().await;
    let node = start_behind(dir, redis, name, &cutter, extra);
    (node, cutter)
}

/// Starts node `name` listening for its peers on a loopback port it picks, advertising
/// `cutter`, and points `cutter` at that port.
pub(crate) fn start_behind(
    dir: &Path,
    redis: &str,
    name: &str,
    cutter: &Cutter,
    extra: &[&str],
) -> Node {
    let advertise = cutter.addr.to_string();
    let mut args = vec!["--peer-addr", "127.0.0.1:0", "--advertise", &advertise];
    args.extend_from_slice(extra);
    let node = Node::start(dir, redis, name, &args);
    cutter.pass_to(node.peer_addr());
    node
}

mod tests {
    use super::{LISTENING, REACHED, logged_addr};

    #[test]
    fn the_addresses_are_read_from_the_nodes_log() {
        // As `echo_server --redis --advertise` logs it, between the lines around it.
        let log = "\
2026-11-28T21:33:21.936852Z  WARN echo_server: no --state-key: confirm's states are sealed with \
a key of this node's own, which the other nodes refuse
2026-11-28T21:33:21.947058Z  INFO echo_server: one node of the sessions in Redis at \
redis://127.0.0.1:35402/, reached by the other nodes at 127.0.0.1:40935 (listening for them \
on 127.0.0.1:33889) node=a
2026-11-28T21:33:24.926827Z  INFO mcp_streamable_server::serve::signal: SIGTERM received; \
shutting down
";
        assert_eq!(
            logged_addr(log, LISTENING),
            Some("127.0.0.1:33889".parse().unwrap())
        );
        assert_eq!(
            logged_addr(log, REACHED),
            Some("127.0.0.1:40935".parse().unwrap())
        );
        let url = "listening on http://127.0.0.1:8080/mcp";
        assert_eq!(logged_addr(url, LISTENING), None);
    }
}
