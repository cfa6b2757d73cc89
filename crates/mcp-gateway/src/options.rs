//! What the gateway runs (the command) and how (the options), with the defaults and their
//! reasons.

use std::ffi::OsString;
use std::time::Duration;

/// The most children at once by default, one per session: the session cap the binary gives the
/// server. Each child is a whole process (tens of MiB for a Python or Node server), so the
/// server's own cap of 10,000 cheap sessions would exhaust a machine long before it was reached.
pub const DEFAULT_MAX_CHILDREN: usize = 100;

/// How long a session may stay idle before it ends and its child is stopped, by default:
/// 10 minutes. An idle session holds a process, not a few kilobytes, so it is shorter than the
/// server's 30 minutes; a client that comes back later starts a new session.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Warm children serving per-request (2026-07-28) clients, by default. Requests are multiplexed
/// over each child, so the pool is there for parallelism (most stdio servers run one thread),
/// not for concurrency: four keeps a small machine's cores busy without idle processes piling up.
pub const DEFAULT_POOL_SIZE: usize = 4;

/// How long a request may wait for its child's answer, by default: 5 minutes. A tool may
/// legitimately run for minutes; a child that never answers still frees its request, which
/// gets a JSON-RPC error, and the child is told the request was cancelled.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The longest line a child may write on stdout, by default: 4 MiB, what the server buffers
/// for one session's readers (`DEFAULT_MAX_BUFFERED_BYTES`), so a longer message could not
/// reach a slow client anyway. A longer line ends the child's session.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;

/// How long a child has to exit after SIGTERM before its process group gets SIGKILL, by
/// default: 5 seconds, the grace `serve` gives requests at shutdown.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(5);

/// The stdio MCP server the gateway runs: a program and its arguments.
///
/// ```
/// let command = mcp_gateway::Command::new("python3").arg("server.py").arg("--quiet");
/// assert_eq!(command.program(), "python3");
/// ```
#[derive(Debug, Clone)]
pub struct Command {
    program: OsString,
    args: Vec<OsString>,
}

impl Command {
    /// Runs `program`, found on `PATH` as a shell would.
    pub fn new(program: impl Into<OsString>) -> Self {
        Command {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The program.
    pub fn program(&self) -> &OsString {
        &self.program
    }

    pub(crate) fn arguments(&self) -> &[OsString] {
        &self.args
    }
}

/// How the gateway runs its children; [`Options::default`] has the `DEFAULT_*` values.
///
/// The session cap and the idle timeout are the server's ([`mcp_streamable_server::Config`]):
/// a child lives as long as its session.
///
/// ```
/// use std::time::Duration;
///
/// let options = mcp_gateway::Options::default()
///     .pool_size(2)
///     .request_timeout(Duration::from_secs(30));
/// assert_eq!(options.pool(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    pool_size: usize,
    request_timeout: Duration,
    max_message_size: usize,
    stop_grace: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pool_size: DEFAULT_POOL_SIZE,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            stop_grace: DEFAULT_STOP_GRACE,
        }
    }
}

impl Options {
    /// Warm children for per-request clients ([`DEFAULT_POOL_SIZE`]); at least one.
    pub fn pool_size(mut self, children: usize) -> Self {
        self.pool_size = children.max(1);
        self
    }

    /// How long a request waits for its child's answer ([`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The longest line read from a child's stdout ([`DEFAULT_MAX_MESSAGE_SIZE`]).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How long a child has between SIGTERM and SIGKILL ([`DEFAULT_STOP_GRACE`]).
    pub fn stop_grace(mut self, grace: Duration) -> Self {
        self.stop_grace = grace;
        self
    }

    /// The pool's size.
    pub fn pool(&self) -> usize {
        self.pool_size
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.request_timeout
    }

    pub(crate) fn max_line(&self) -> usize {
        self.max_message_size
    }

    pub(crate) fn grace(&self) -> Duration {
        self.stop_grace
    }
}
