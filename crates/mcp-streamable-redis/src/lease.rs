//! The node's lease, kept on a thread of its own with a connection of its own: a renewal every
//! third of a lease, whatever the application's runtime and the seams' connection are doing, each
//! bounded to its third so that one that hangs does not hold back the next. A renewal that finds
//! the lease lapsed (the node was paused, or cut off, past it) makes the node a new incarnation,
//! whose sessions the service claims again. Every renewal reads the membership too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::connection::Conn;
use crate::error::Error;
use crate::node::Node;

/// What a renewal's acknowledgement is good for, short of a lease: the lease is measured from
/// the sending of the renewal by this process's clock, and expires in Redis by Redis's; a
/// twentieth covers the two clocks' rates drifting apart, by far.
fn good_for(lease: Duration) -> Duration {
    lease - lease / 20
}

/// A fresh incarnation: random, never 0.
fn incarnation() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0 | 1
}

/// Registers `node` in the membership as a fresh incarnation, on `conn`, and takes the lease
/// that gives it; the incarnation.
pub(crate) async fn register(node: &Node, conn: &Conn, timeout: Duration) -> Result<u64, Error> {
    let fresh = incarnation();
    let sent = Instant::now();
    let reading = node.members(conn, "register", fresh, timeout).await?;
    node.lease
        .renewed(fresh, sent, good_for(node.options.lease));
    node.members.update(&reading, Instant::now());
    Ok(fresh)
}

/// Keeps the lease until dropped; then the node leaves the membership, so that its sessions go
/// on elsewhere at once.
#[derive(Debug)]
pub(crate) struct Keeper {
    stop: Arc<AtomicBool>,
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Starts keeping `node`'s lease, registered already as `incarnation`.
pub(crate) fn keep(node: Arc<Node>, incarnation: u64) -> std::io::Result<Keeper> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    std::thread::Builder::new()
        .name(format!("mcp-lease-{}", node.options.node))
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    tracing::error!(%error, "the lease keeper has no runtime: the node's lease lapses");
                    return;
                }
            };
            runtime.block_on(renew(node, incarnation, stopped));
        })?;
    Ok(Keeper { stop })
}

/// Renews every third of a lease until stopped.
async fn renew(node: Arc<Node>, mut incarnation: u64, stop: Arc<AtomicBool>) {
    let lease = node.options.lease;
    let period = lease / 3;
    // Each renewal bounded to its third, or the command timeout if that is shorter.
    let timeout = period.min(node.options.command_timeout);
    let name = node.options.node.clone();
    let mut conn: Option<Conn> = None;
    let mut failing = false;
    let mut next = tokio::time::Instant::now() + period;
    loop {
        tokio::time::sleep_until(next).await;
        if stop.load(Ordering::Acquire) {
            if let Some(conn) = &conn {
                let _ = node.members(conn, "leave", incarnation, timeout).await;
            }
            return;
        }
        let sent = Instant::now();
        next = tokio::time::Instant::from_std(sent) + period;
        let Some(current) = connected(&node, &mut conn, timeout).await else {
            failing = warn_once(failing, &name, "could not reach Redis to renew the lease");
            continue;
        };
        match node.members(&current, "renew", incarnation, timeout).await {
            Ok(reading) if reading.renewed => {
                node.lease.renewed(incarnation, sent, good_for(lease));
                node.members.update(&reading, Instant::now());
                if std::mem::take(&mut failing) {
                    tracing::info!(node = %name, "the node's lease is renewed again");
                }
            }
            Ok(_) => {
                // Lapsed: whatever this incarnation held is anyone's to take. Back as a new one,
                // the service claims again what nobody took meanwhile.
                node.lease.lapse();
                match register(&node, &current, timeout).await {
                    Ok(fresh) => {
                        tracing::warn!(node = %name, "the node's lease had lapsed: back as a new incarnation");
                        incarnation = fresh;
                        failing = false;
                    }
                    Err(error) => {
                        failing = warn_once(
                            failing,
                            &name,
                            &format!("could not register again: {error}"),
                        );
                    }
                }
            }
            Err(error) => {
                failing = warn_once(
                    failing,
                    &name,
                    &format!("could not renew the lease: {error}"),
                );
                // A connection that timed out may be stuck: a new one next time.
                if error.is_timeout() {
                    conn = None;
                }
            }
        }
    }
}

/// The keeper's connection, opened if it has none.
async fn connected(node: &Node, conn: &mut Option<Conn>, timeout: Duration) -> Option<Conn> {
    if conn.is_none() {
        *conn = node.target.connect(timeout).await.ok();
    }
    conn.clone()
}

/// Warns at the first failure of an outage, and notes the rest at debug level.
fn warn_once(failing: bool, node: &str, what: &str) -> bool {
    if failing {
        tracing::debug!(node, "{what}");
    } else {
        tracing::warn!(node, "{what}");
    }
    true
}
