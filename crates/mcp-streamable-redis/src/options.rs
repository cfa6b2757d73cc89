//! What a node's backend is built with.

use std::time::Duration;

/// The prefix of every key and channel by default.
pub const DEFAULT_PREFIX: &str = "mcp";

/// How long a node's lease lives without renewal by default: 1.5 s.
///
/// The node renews it every third of it, so two renewals may fail (a Redis hiccup) before
/// another node may take its sessions over; a dead node's sessions move within it.
pub const DEFAULT_LEASE: Duration = Duration::from_millis(1500);

/// How long one Redis command may take by default: 1 s.
///
/// Past it the call fails, and the server answers 503 at once rather than holding the
/// request while Redis is away.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a session's keys live without a request by default: the server's idle timeout.
pub const DEFAULT_SESSION_EXPIRY: Duration = mcp_streamable_server::DEFAULT_IDLE_TIMEOUT;

/// The events one session keeps by default, all its streams together: 4096.
///
/// The oldest go first; a client resuming from before them is told its events were purged.
pub const DEFAULT_MAX_EVENTS_PER_SESSION: usize = 4096;

/// The bytes of events one session keeps by default: 1 MiB, as the in-memory store.
pub const DEFAULT_MAX_BYTES_PER_SESSION: usize =
    mcp_streamable_server::DEFAULT_MAX_STORE_BYTES_PER_SESSION;

/// How long a forward waits for the holder's answer by default: 5 s.
pub const DEFAULT_FORWARD_TIMEOUT: Duration = Duration::from_secs(5);

/// The envelopes from other nodes waiting for this node's service by default: 1024.
///
/// A full inbox refuses the next at once, so that the sender fails fast instead of queueing.
pub const DEFAULT_INBOX_CAPACITY: usize = 1024;

/// The forwards this node may have waiting for answers by default: 4096.
pub const DEFAULT_MAX_PENDING_FORWARDS: usize = 4096;

/// How a node's [`RedisBackend`](crate::RedisBackend) behaves.
///
/// ```
/// use std::time::Duration;
/// use mcp_streamable_redis::Options;
///
/// let options = Options::default()
///     .prefix("myapp:mcp")
///     .node("node-a")
///     .session_expiry(Duration::from_secs(600));
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    pub(crate) prefix: String,
    pub(crate) node: String,
    pub(crate) lease: Duration,
    pub(crate) command_timeout: Duration,
    pub(crate) session_expiry: Duration,
    pub(crate) max_events_per_session: usize,
    pub(crate) max_bytes_per_session: usize,
    pub(crate) forward_timeout: Duration,
    pub(crate) inbox_capacity: usize,
    pub(crate) max_pending_forwards: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            prefix: DEFAULT_PREFIX.to_owned(),
            node: uuid::Uuid::new_v4().to_string(),
            lease: DEFAULT_LEASE,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            session_expiry: DEFAULT_SESSION_EXPIRY,
            max_events_per_session: DEFAULT_MAX_EVENTS_PER_SESSION,
            max_bytes_per_session: DEFAULT_MAX_BYTES_PER_SESSION,
            forward_timeout: DEFAULT_FORWARD_TIMEOUT,
            inbox_capacity: DEFAULT_INBOX_CAPACITY,
            max_pending_forwards: DEFAULT_MAX_PENDING_FORWARDS,
        }
    }
}

impl Options {
    /// The prefix of every key and channel (default [`DEFAULT_PREFIX`]): servers with different
    /// prefixes share a Redis without seeing each other.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// This node's name, unique among the nodes (default: a random UUID, new at each start, so
    /// that a restarted process is a new node).
    pub fn node(mut self, node: impl Into<String>) -> Self {
        self.node = node.into();
        self
    }

    /// How long the node's lease lives without renewal (default [`DEFAULT_LEASE`]); it is
    /// renewed every third of it. At least 3 ms.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(3));
        self
    }

    /// How long one Redis command may take (default [`DEFAULT_COMMAND_TIMEOUT`]).
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// How long a session's keys live without a request (default [`DEFAULT_SESSION_EXPIRY`]):
    /// give it the server's [`idle_timeout`](mcp_streamable_server::Config::idle_timeout). The
    /// keys live a quarter longer, since the server touches a session at most once per quarter
    /// of its idle timeout. At least 1 ms.
    pub fn session_expiry(mut self, expiry: Duration) -> Self {
        self.session_expiry = expiry.max(Duration::from_millis(1));
        self
    }

    /// The events one session keeps, all its streams together (default
    /// [`DEFAULT_MAX_EVENTS_PER_SESSION`]). At least 1.
    pub fn max_events_per_session(mut self, events: usize) -> Self {
        self.max_events_per_session = events.max(1);
        self
    }

    /// The bytes of events one session keeps, 64 bytes of bookkeeping counted per event
    /// (default [`DEFAULT_MAX_BYTES_PER_SESSION`]).
    pub fn max_bytes_per_session(mut self, bytes: usize) -> Self {
        self.max_bytes_per_session = bytes;
        self
    }

    /// How long a forward waits for the holder's answer (default
    /// [`DEFAULT_FORWARD_TIMEOUT`]).
    pub fn forward_timeout(mut self, timeout: Duration) -> Self {
        self.forward_timeout = timeout;
        self
    }

    /// The envelopes from other nodes that may wait for this node's service (default
    /// [`DEFAULT_INBOX_CAPACITY`]). At least 1.
    pub fn inbox_capacity(mut self, capacity: usize) -> Self {
        self.inbox_capacity = capacity.max(1);
        self
    }

    /// The forwards this node may have waiting for answers (default
    /// [`DEFAULT_MAX_PENDING_FORWARDS`]).
    pub fn max_pending_forwards(mut self, forwards: usize) -> Self {
        self.max_pending_forwards = forwards;
        self
    }

    /// The lifetime of a session's keys: the session expiry and a quarter.
    pub(crate) fn key_ttl_ms(&self) -> u64 {
        let ttl = self.session_expiry + self.session_expiry / 4;
        u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    pub(crate) fn lease_ms(&self) -> u64 {
        u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX)
    }
}
