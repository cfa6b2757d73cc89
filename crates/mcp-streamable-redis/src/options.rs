//! What a node's backend is built with.

use std::net::{AddrParseError, IpAddr, SocketAddr};
use std::time::Duration;

/// The prefix of every key by default.
pub const DEFAULT_PREFIX: &str = "mcp";

/// How long a node's lease lives without renewal by default: 750 ms.
///
/// It bounds failover: a killed node's sessions go on elsewhere once its lease lapses, within
/// this of its last renewal, so that a client waits under a second. The node renews it every
/// third of it, each renewal good for a lease from when it was *sent*, so a Redis stall or a
/// pause of the process shorter than two thirds of it (500 ms) never costs the node its
/// sessions; a longer one fences the node until it is back. Four renewals a second per node are
/// what it costs Redis.
pub const DEFAULT_LEASE: Duration = Duration::from_millis(750);

/// How long one Redis command may take by default: 1 s.
///
/// Past it the call fails, and the server answers 503 at once rather than holding the
/// request while Redis is away.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a session's keys live without a request by default: the server's idle timeout.
pub const DEFAULT_SESSION_EXPIRY: Duration = mcp_streamable_server::DEFAULT_IDLE_TIMEOUT;

/// The events one session keeps by default, all its streams together: 4096.
///
/// Finished streams go first, the oldest finished first, then the open streams' oldest events;
/// a client resuming from before what is kept is told its events were purged.
pub const DEFAULT_MAX_EVENTS_PER_SESSION: usize = 4096;

/// The bytes of events one session keeps by default: 1 MiB, as the in-memory store.
pub const DEFAULT_MAX_BYTES_PER_SESSION: usize =
    mcp_streamable_server::DEFAULT_MAX_STORE_BYTES_PER_SESSION;

/// How long a finished stream's events are kept for a client to resume it by default: 60 s.
///
/// A client whose stream broke comes back after the priming event's `retry` (1 s), backing off
/// for at most a few attempts (up to 30 s apart): within a minute, or never. An idle session
/// then holds its record only.
pub const DEFAULT_RESUME_WINDOW: Duration = Duration::from_secs(60);

/// Where a node listens for its peers by default: a port of the loopback the OS picks, which
/// only nodes on the same host reach. Give each node an address its peers reach
/// ([`Options::peer_addr`]).
pub const DEFAULT_PEER_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// How a node's [`RedisBackend`](crate::RedisBackend) behaves.
///
/// ```
/// use std::time::Duration;
/// use mcp_streamable_redis::Options;
///
/// let options = Options::default()
///     .prefix("myapp:mcp")
///     .node("node-a")
///     .peer_addr("10.0.0.7:7001".parse().unwrap())
///     .session_expiry(Duration::from_secs(600));
/// # let _ = options;
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    pub(crate) prefix: String,
    pub(crate) node: String,
    pub(crate) lease: Duration,
    pub(crate) command_timeout: Duration,
    pub(crate) session_expiry: Duration,
    pub(crate) max_events_per_session: usize,
    pub(crate) max_bytes_per_session: usize,
    pub(crate) resume_window: Duration,
    pub(crate) peer_addr: SocketAddr,
    pub(crate) advertise: Option<SocketAddr>,
    pub(crate) secret: Option<Vec<u8>>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("prefix", &self.prefix)
            .field("node", &self.node)
            .field("lease", &self.lease)
            .field("command_timeout", &self.command_timeout)
            .field("session_expiry", &self.session_expiry)
            .field("max_events_per_session", &self.max_events_per_session)
            .field("max_bytes_per_session", &self.max_bytes_per_session)
            .field("resume_window", &self.resume_window)
            .field("peer_addr", &self.peer_addr)
            .field("advertise", &self.advertise)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .finish()
    }
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
            resume_window: DEFAULT_RESUME_WINDOW,
            peer_addr: DEFAULT_PEER_ADDR,
            advertise: None,
            secret: None,
        }
    }
}

impl Options {
    /// The prefix of every key (default [`DEFAULT_PREFIX`]): servers with different prefixes
    /// share a Redis without seeing each other. Without braces: the keys' hash tags follow it.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// This node's name, unique among the nodes (default: a random UUID). A process started
    /// again under the same name (a container restarted with a fixed pod name) is a new
    /// incarnation of it: the sessions of the one before go on at once, here or on any node.
    pub fn node(mut self, node: impl Into<String>) -> Self {
        self.node = node.into();
        self
    }

    /// How long the node's lease lives without renewal (default [`DEFAULT_LEASE`]); it is
    /// renewed every third of it. At least 30 ms.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
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
    /// (default [`DEFAULT_MAX_BYTES_PER_SESSION`]). A message larger than this is not kept: a
    /// response gets a stand-in, an error saying so, which a client resuming reads in its place.
    pub fn max_bytes_per_session(mut self, bytes: usize) -> Self {
        self.max_bytes_per_session = bytes;
        self
    }

    /// How long a finished stream's events are kept for a client to resume it (default
    /// [`DEFAULT_RESUME_WINDOW`]). At least 1 ms.
    pub fn resume_window(mut self, window: Duration) -> Self {
        self.resume_window = window.max(Duration::from_millis(1));
        self
    }

    /// Where this node listens for the requests other nodes forward it (default
    /// [`DEFAULT_PEER_ADDR`], the loopback): an address the other nodes reach, on a network
    /// clients do not (the requests are signed, not encrypted).
    pub fn peer_addr(mut self, addr: SocketAddr) -> Self {
        self.peer_addr = addr;
        self
    }

    /// The address the other nodes are told to reach this node at, when it is not
    /// [`peer_addr`](Options::peer_addr) (behind NAT, or bound to `0.0.0.0`). Its port 0 stands
    /// for the port the node listens on: the IP alone is given (a pod's, say), whichever port
    /// `peer_addr` bound.
    ///
    /// ```
    /// # use std::net::{Ipv6Addr, SocketAddr};
    /// let pod = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 7);
    /// let options = mcp_streamable_redis::Options::default()
    ///     .peer_addr("[::]:8081".parse().unwrap())
    ///     .advertise(SocketAddr::new(pod.into(), 0)); // reached at [fd00::7]:8081
    /// ```
    pub fn advertise(mut self, addr: SocketAddr) -> Self {
        self.advertise = Some(addr);
        self
    }

    /// The key with which the nodes sign the requests they forward to each other (default:
    /// a random key the first node stores in Redis, which every node reads: then whoever can
    /// read Redis can forge a forward, as they could change the sessions anyway).
    pub fn secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.secret = Some(secret.into());
        self
    }

    /// The lifetime of a session's keys: the session expiry and a quarter.
    pub(crate) fn key_ttl_ms(&self) -> u64 {
        millis(self.session_expiry + self.session_expiry / 4).max(1)
    }

    pub(crate) fn lease_ms(&self) -> u64 {
        millis(self.lease)
    }

    pub(crate) fn window_ms(&self) -> u64 {
        millis(self.resume_window).max(1)
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// An address to [`advertise`](Options::advertise), as a command line or a manifest gives it:
/// `IP:PORT` (`[IPv6]:PORT`), or an IP alone, on the port the node binds (port 0). So a
/// manifest passes a pod's IP whatever its family: `$(POD_IP):8081` is no address when the IP
/// is IPv6 (`fd00::7:8081` reads as an IPv6 address, not as one with a port).
///
/// ```
/// use mcp_streamable_redis::parse_advertised;
/// assert_eq!(parse_advertised("10.0.0.7:8081").unwrap().port(), 8081);
/// assert_eq!(parse_advertised("[fd00::7]:8081").unwrap().port(), 8081);
/// assert_eq!(parse_advertised("fd00::7").unwrap().port(), 0);
/// assert!(parse_advertised("node-a:8081").is_err());
/// ```
///
/// # Errors
/// A value that is neither an address nor an IP.
pub fn parse_advertised(value: &str) -> Result<SocketAddr, AddrParseError> {
    value
        .parse::<SocketAddr>()
        .or_else(|_| value.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
}
