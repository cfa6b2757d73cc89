//! `mcp-load`: the load generator of the load benchmark.
//!
//! ```text
//! mcp-load --url URL [--mode calls] [--concurrency C] [--duration T] [--warmup W]
//!          [--server-pid PID ...] [--side-pid NAME=PID ...] [--protocol 2026-07-28] [--json]
//! mcp-load --url URL --mode idle --server-pid PID [--sessions N] [--close] [--json]
//! mcp-load --url URL --mode stream --server-pid PID [--notifications N] [--batch K] [--json]
//! mcp-load --url URL --mode starts [--concurrency C] [--duration T] [--warmup W]
//!          [--server-pid PID] [--protocol 2026-07-28] [--json]
//! mcp-load --url URL --mode death [--trials N] [--json]
//! ```
//!
//! Plain hyper, HTTP/1.1, `TCP_NODELAY`, one connection per session, on one thread (pin it
//! to a core of its own with `taskset`).
//!
//! - `calls` (the default): `C` sessions each `initialize`, send `notifications/initialized`,
//!   then call `tools/call echo {text}` with a unique text in a closed loop, `W` seconds of
//!   warm-up then `T` measured seconds. Every reply, JSON or SSE, is checked to be the result
//!   of its own request; a wrong or missing one is an error. Reports requests per second,
//!   p50, p99 and max latency, errors, and with `--server-pid` the server's CPU time per
//!   request (`utime + stime` of `/proc/PID/stat` over the window; `--server-pid` given
//!   several times, the processes' sum: the nodes of a cluster). `--side-pid NAME=PID` reports
//!   another process's CPU per request apart, under `NAME` (Redis, a proxy). With `--protocol
//!   2026-07-28` there are no sessions: `C` connections each call in a closed loop the
//!   per-request way (no `initialize`; `_meta` with the version, client capabilities and
//!   client info in every request; `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//!   headers).
//! - `idle`: opens `N` sessions (the first is a warm-up), reads the server's `VmRSS` before
//!   and after, and reports KiB per session; `--close` closes each session's connection once
//!   it is initialized, to count the session alone.
//! - `stream`: one session receives `N` notifications on its standalone GET stream from a
//!   server with the `flood` tool (`mcp-flood`), in batches of `K`; reports the server's
//!   `VmRSS` along the way.
//! - `starts`: new clients in a closed loop, `C` at a time, each a fresh connection, the
//!   session's start (nothing per request), one `echo` answered and DELETE; reports starts
//!   per second, the time to the first answer and the server's CPU per start (a gateway's
//!   cost of a new client).
//! - `death`: against a gateway fronting `benches/peers/gateways/echo_child.py`, `N` trials of
//!   a session's child killed (SIGKILL, its pid from the `pid` tool) while a `sleep` call
//!   waits on it; reports the time from the kill to the client's error.
//!
//! `--bearer TOKEN` sends `Authorization: Bearer TOKEN` on every request, for a protected
//! server; with `--dpop-key FILE --dpop-htu URL`, `Authorization: DPoP TOKEN` and a fresh DPoP
//! proof on every POST, signed with the P-256 key of FILE (PKCS#8 PEM), for `htu` URL.
//!
//! `--json` prints one JSON object (`report.rs`) instead of text.

mod calls;
mod death;
mod dpop;
mod idle;
mod per_request;
mod reply;
mod session;
mod starts;
mod stream;

use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::builder::RangedU64ValueParser;

use self::session::Target;
use crate::cli;
use crate::measure::{self, Watched};
use crate::report;

/// What `mcp-load` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Sessions calling `echo` in a closed loop: throughput, latency, CPU per request.
    Calls,
    /// Sessions that initialize and then do nothing: the server's memory per session.
    Idle,
    /// One session's standalone stream receiving notifications: the server's memory.
    Stream,
    /// New clients in a closed loop (start, one call, end): starts per second.
    Starts,
    /// A session's child killed while a call waits on it: the time to the client's error.
    Death,
}

/// The load generator of the load benchmark: plain hyper, HTTP/1.1, one connection per session,
/// one thread.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-load")]
pub struct Args {
    /// The server's MCP endpoint, `http://host:port/path`.
    #[arg(long)]
    pub url: String,
    /// What to measure.
    #[arg(long, value_enum, default_value_t = Mode::Calls)]
    pub mode: Mode,
    /// Sessions (`calls`), each with its connection.
    #[arg(long, default_value_t = 16, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub concurrency: usize,
    /// Seconds measured (`calls`), fractions allowed.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = cli::seconds)]
    pub duration: Duration,
    /// Seconds of warm-up before the window (`calls`).
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = cli::seconds)]
    pub warmup: Duration,
    /// The server's process, for its CPU time and memory; given several times, their CPU
    /// summed (the nodes of a cluster), the first one's memory.
    #[arg(long = "server-pid", value_name = "PID")]
    pub server_pids: Vec<u32>,
    /// Another process whose CPU per request is reported apart, under NAME (Redis, a proxy).
    #[arg(long = "side-pid", value_name = "NAME=PID", value_parser = cli::named_pid)]
    pub side_pids: Vec<(String, u32)>,
    /// Sessions opened (`idle`), the first as a warm-up.
    #[arg(long, default_value_t = 10_000, value_parser = RangedU64ValueParser::<usize>::new().range(2..))]
    pub sessions: usize,
    /// Closes each idle session's connection once it is initialized (`idle`).
    #[arg(long)]
    pub close: bool,
    /// Trials (`death`).
    #[arg(long, default_value_t = 5, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub trials: usize,
    /// Notifications to receive (`stream`).
    #[arg(long, default_value_t = 1_000_000)]
    pub notifications: u64,
    /// Notifications asked for per `flood` call (`stream`).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    /// `2026-07-28`: calls the per-request way, without sessions (`calls` only).
    #[arg(long, value_name = "VERSION", value_parser = per_request_version)]
    pub protocol: Option<String>,
    /// Calls `lookup` instead of `echo`: two arguments mirrored in `Mcp-Param-*` headers, which
    /// the server checks against the body (with `--protocol 2026-07-28` only).
    #[arg(long, requires = "protocol")]
    pub mirrored: bool,
    /// Sends `Authorization: Bearer TOKEN` on every request.
    #[arg(long, value_name = "TOKEN")]
    pub bearer: Option<String>,
    /// Sends the token as DPoP-bound, with a proof per POST signed by the P-256 key of FILE
    /// (PKCS#8 PEM).
    #[arg(long, value_name = "FILE", requires_all = ["bearer", "dpop_htu"])]
    pub dpop_key: Option<String>,
    /// The `htu` the DPoP proofs name.
    #[arg(long, value_name = "URL", requires = "dpop_key")]
    pub dpop_htu: Option<String>,
    /// Prints one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The one version `--protocol` takes: the per-request protocol's.
fn per_request_version(value: &str) -> Result<String, String> {
    let version = per_request::VERSION.as_str();
    if value == version {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{version} (the per-request protocol); without it, sessions of 2025-06-18"
        ))
    }
}

/// Runs `mcp-load`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.protocol.is_some() && !matches!(args.mode, Mode::Calls | Mode::Starts) {
        bail!("--protocol 2026-07-28 has no sessions: it goes with --mode calls or starts only");
    }
    let mut target = Target::parse(&args.url)?;
    match (&args.bearer, &args.dpop_key, &args.dpop_htu) {
        (Some(token), Some(key), Some(htu)) => {
            target = target.dpop(token, dpop::Prover::new(key, htu, token)?)?;
        }
        (Some(token), _, _) => target = target.bearer(token)?,
        _ => {}
    }
    if args.protocol.is_some() {
        target = target.per_request();
    }
    if args.mirrored {
        target = target.mirrored();
    }
    // One thread: the load generator gets one core, and this is the cheapest way to use it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pid = || {
        args.server_pids
            .first()
            .copied()
            .with_context(|| "this mode needs --server-pid")
    };
    let plan = |target| calls::Plan {
        target,
        concurrency: args.concurrency,
        window: measure::Plan {
            warmup: args.warmup,
            duration: args.duration,
            watched: Watched {
                server_pids: args.server_pids.clone(),
                side_pids: args.side_pids.clone(),
            },
        },
    };
    match args.mode {
        Mode::Calls => report::print(&runtime.block_on(calls::run(plan(target)))?, args.json),
        Mode::Starts => report::print(&runtime.block_on(starts::run(plan(target)))?, args.json),
        Mode::Death => report::print(
            &runtime.block_on(death::run(target, args.trials))?,
            args.json,
        ),
        Mode::Idle => {
            let report = runtime.block_on(idle::run(target, args.sessions, args.close, pid()?))?;
            report::print(&report, args.json)
        }
        Mode::Stream => {
            let report =
                runtime.block_on(stream::run(target, args.notifications, args.batch, pid()?))?;
            report::print(&report, args.json)
        }
    }
}
