//! What a node's three seams share: its options and keys, its command connection, its lease
//! and view of the membership, the key its forwards are signed with, and where it listens for
//! its peers. The factory (`backend`) makes it; the seams and the lease keeper use it.

use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};

use mcp_streamable_server::{Fence, Lease};
use redis::{FromRedisValue, Value};

use crate::connection::{Conn, Target};
use crate::error::{Error, Kind};
use crate::keys::Keys;
use crate::members::{Members, Reading};
use crate::options::Options;
use crate::scripts::{self, Call};

pub(crate) struct Node {
    pub(crate) options: Options,
    pub(crate) keys: Keys,
    /// Where Redis is: the lease keeper opens its own connection there.
    pub(crate) target: Target,
    /// The command connection of the seams.
    pub(crate) conn: Conn,
    pub(crate) lease: Lease,
    pub(crate) members: Members,
    pub(crate) secret: Vec<u8>,
    /// Where the other nodes reach this one.
    pub(crate) address: SocketAddr,
    /// Where `listener` is bound.
    pub(crate) peer_addr: SocketAddr,
    pub(crate) listener: Mutex<Option<std::net::TcpListener>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("node", &self.options.node)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Node {
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, Error> {
        self.conn.query(cmd, self.options.command_timeout).await
    }

    pub(crate) async fn script(&self, call: &Call) -> Result<Value, Error> {
        self.conn.script(call, self.options.command_timeout).await
    }

    /// The membership script, on `conn`, in `mode`, for this node's `incarnation`.
    pub(crate) async fn members(
        &self,
        conn: &Conn,
        mode: &str,
        incarnation: u64,
        timeout: std::time::Duration,
    ) -> Result<Reading, Error> {
        // The shared secret, unless the nodes were given theirs.
        let shared: &[u8] = match self.options.secret {
            Some(_) => b"",
            None => &self.secret,
        };
        let keys = [self.keys.members(), self.keys.up(), self.keys.secret()];
        let mut call = Call::new(&scripts::MEMBERS, &keys);
        call.arg(mode)
            .arg(&self.options.node)
            .arg(incarnation)
            .arg(self.address.to_string())
            .arg(self.options.lease_ms())
            .arg(shared);
        let reply = conn.script(&call, timeout).await?;
        Reading::parse(reply).ok_or_else(|| Error::new(Kind::Malformed))
    }

    /// Ends `session`, every key of it, if `fence` is its holding (always without one).
    pub(crate) async fn end(&self, session: &str, fence: Option<Fence>) -> Result<(), Error> {
        let mut call = Call::new(&scripts::END, &self.keys.of_session(session));
        fence_args(&mut call, &self.options.node, fence);
        self.script(&call).await.map(drop)
    }

    /// The listener, the first time it is asked for.
    pub(crate) fn take_listener(&self) -> Option<std::net::TcpListener> {
        self.listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// A fence as script arguments: this node, the incarnation, the generation; three empty
/// arguments for none.
pub(crate) fn fence_args(call: &mut Call, node: &str, fence: Option<Fence>) {
    match fence {
        Some(fence) => {
            call.arg(node).arg(fence.incarnation).arg(fence.generation);
        }
        None => {
            call.arg("").arg("").arg("");
        }
    }
}

/// A fenced script's answer: -1 when the fence is not the session's holding.
pub(crate) fn fenced(reply: &Value) -> Result<(), Error> {
    match reply {
        Value::Int(-1) => Err(Error::new(Kind::NotHolder)),
        _ => Ok(()),
    }
}
