//! A gateway between stdio MCP servers and the Streamable HTTP transport.
//!
//! `mcp-gateway serve --addr ADDR -- COMMAND ARGS...` serves the stdio MCP server `COMMAND`
//! over Streamable HTTP at `http://ADDR/mcp`, to clients of both families of the protocol:
//!
//! - **Session-based clients** (2025-03-26 to 2025-11-25) get a child of their own: it is
//!   started when their `initialize` arrives, which it answers, and every message is relayed
//!   both ways: the client's requests and notifications, the child's responses, progress,
//!   requests to the client (sampling, elicitation, roots) and notifications. The child is
//!   stopped when the session ends: DELETE, idle timeout, eviction, shutdown.
//! - **Per-request clients** (2026-07-28) are served by a pool of warm children, each started
//!   and initialized once by the gateway (with the newest session revision, 2025-11-25, as a
//!   stdio server speaks no per-request revision, and no client capabilities, as a shared child
//!   cannot ask any one client). Requests of any number of clients run at once over one child
//!   under ids of the gateway's own, and their progress tokens likewise, so that they never
//!   mix. A client that closes its stream cancels its request: the child reads
//!   `notifications/cancelled` with the id it knows. `server/discover` is answered from the
//!   child's `initialize`.
//!
//! The other direction, `mcp-gateway connect URL [--header 'NAME: VALUE']...`, offers a
//! Streamable HTTP server on stdin and stdout, for a host that runs stdio servers only, through
//! our client (`mcp_streamable_client`): either family, streams resumed, the headers sent with
//! every request; [`bridge`] is its relay, for any two connections. With `--oauth` it reaches a
//! protected server as an OAuth client (`mcp_streamable_oauth`): the authorization URL printed
//! on stderr, the browser's redirect taken on a loopback port, the tokens kept in the file
//! `--token-file` names ([`TokenFile`], mode 0600), so that the next run needs no browser.
//!
//! # Faults
//!
//! A child that exits, closes its stdout, writes a line that is not JSON-RPC or one longer
//! than the bound turns into JSON-RPC errors (-32603) for every request waiting on it, at
//! once, and ends its session: **a child that dies ends its session; there is no silent
//! restart** (a pool child's slot gets a new child for the next request). A command that cannot
//! be started is an error for the `initialize` (or request) that needed it, and the gateway
//! goes on. A request the child does not answer within the request timeout gets an error, and
//! the child is told it was cancelled. The child's stderr goes to the gateway's log, each line
//! with the session's id (`pool-N` for the pool). Every child runs in a process group of its
//! own, stopped with SIGTERM to the group, then SIGKILL after a grace; [`Gateway::stop`] stops
//! them all, and the binary calls it when SIGTERM or SIGINT ends the server.
//!
//! # Defaults
//!
//! | What | Default | Flag |
//! |---|---|---|
//! | children of sessions at most (the session cap) | [`DEFAULT_MAX_CHILDREN`] (100) | `--max-sessions` |
//! | idle timeout of a session and its child | [`DEFAULT_IDLE_TIMEOUT`] (10 min) | `--idle-timeout` |
//! | warm children for per-request clients | [`DEFAULT_POOL_SIZE`] (4) | `--pool-size` |
//! | a request's wait for its child | [`DEFAULT_REQUEST_TIMEOUT`] (5 min) | `--request-timeout` |
//! | longest line of a child's stdout | [`DEFAULT_MAX_MESSAGE_SIZE`] (4 MiB) | `--max-message-size` |
//! | from SIGTERM to SIGKILL | [`DEFAULT_STOP_GRACE`] (5 s) | `--stop-grace` |
//!
//! Each constant's documentation says why. Everything else is the server crate's
//! (`mcp_streamable_server`): `serve`'s limits, and streams resumable from an in-memory event
//! store (the binary's default; `--no-event-store` turns it off).
//!
//! With `--redis URL` the gateway is one node of several sharing their sessions through Redis
//! (`mcp_streamable_redis`, given to [`Config::cluster`](mcp_streamable_server::Config::cluster)):
//! `--node NAME` (a random UUID by default), `--peer-addr IP:PORT` (where the other nodes reach
//! it; a free loopback port by default), `--advertise IP[:PORT]` (the address they are told,
//! when not that one; an IP alone on the port it listens on). A session's child lives on the
//! node holding the session; another node forwards the session's requests there. A dead
//! holder's session (or one a node shutting down handed over) is taken over by the next node
//! that needs it: the service hands the session again to the factory with the client's stored
//! `initialize`, so a new child is started there and initialized as the first was (its answer
//! goes to no client), then reads `notifications/initialized`; what the old child kept in memory
//! is gone.
//!
//! # As a library
//!
//! [`Gateway::service`] gives the `StreamableHttpService` to serve or mount in a router; see
//! [`Gateway`].
//!
//! # How it is built
//!
//! The modules form layers, top to bottom; a module imports from its own layer and those
//! below it, never from one above:
//!
//! 1. `gateway`, `bridge`: the public face, the `serve` direction and the `connect` one (the
//!    latter on the transport traits only).
//! 2. `session`, `per_request`: a connection of each family, served.
//! 3. `shared`: what the connections share.
//! 4. `pool`, `relay`: the warm children of the per-request clients; one request relayed and
//!    its answer back.
//! 5. `start`: a child started and linked to.
//! 6. `link`: one child's JSON-RPC, ids remapped, its end turned into errors.
//! 7. `process`: spawning, process groups, stopping, the children alive.
//! 8. `options`, `error`, `token_file`: the command, the options and defaults; the failures;
//!    the OAuth tokens kept in a file.
#![deny(missing_docs, missing_debug_implementations)]

mod bridge;
mod error;
mod gateway;
mod link;
mod options;
mod per_request;
mod pool;
mod process;
mod relay;
mod session;
mod shared;
mod start;
mod token_file;

pub use crate::bridge::bridge;
pub use crate::gateway::Gateway;
pub use crate::options::{
    Command, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CHILDREN, DEFAULT_MAX_MESSAGE_SIZE,
    DEFAULT_POOL_SIZE, DEFAULT_REQUEST_TIMEOUT, DEFAULT_STOP_GRACE, Options,
};
pub use crate::token_file::TokenFile;
