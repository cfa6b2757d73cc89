//! `mcp-client-load`: a client library's throughput, many callers sharing one MCP session.
//!
//! ```text
//! mcp-client-load --url URL --client ours|rmcp|rmcp-pooled [--callers C] [--duration T]
//!                 [--warmup W] [--server-pid PID] [--json]
//! ```
//!
//! One client, one session (`initialize` asking for 2025-11-25, `notifications/initialized`),
//! then `C` tasks each calling `tools/call echo {text}` with a unique text in a closed loop over
//! that session; every result must be the echo of its own text. `W` seconds of warm-up, then
//! `T` measured seconds. Everything runs on one thread (a `current_thread` runtime), so the
//! client's CPU time per request compares across clients; pin it to a core with `taskset`.
//!
//! - `ours`: `mcp_streamable_client::Client`, pinned to [`Family::Session`], its telemetry
//!   off (no OpenTelemetry provider is installed here), its defaults otherwise (pooled
//!   HTTP/1.1 keep-alive connections, `TCP_NODELAY`, the standalone GET stream on), driven
//!   through the `mcp_transport` traits: one task receives and hands each response to its
//!   caller by id.
//! - `rmcp`: rmcp 3.11.0's own client (`().serve(transport)`, `call_tool`) over its
//!   `StreamableHttpClientTransport` as `from_config` builds it: its default reqwest client,
//!   which keeps no idle connection (`pool_max_idle_per_host(0)`), so each POST opens a new one.
//! - `rmcp-pooled`: the same over a reqwest client with reqwest's default pool, which keeps
//!   connections alive as ours does.
//!
//! Reports requests per second, p50, p99 and max latency, errors, the client's own CPU time
//! per request (`utime + stime` of `/proc/self/stat` over the window), with `--server-pid` the
//! server's, and the TCP connections opened in the window. `--json` prints one JSON object
//! (`CallsReport` in `report.rs`, as `mcp-load`'s) instead of text.
//!
//! [`Family::Session`]: mcp_streamable_client::Family::Session

mod callers;
mod ours;
mod rmcp;

use std::time::Duration;

use clap::builder::RangedU64ValueParser;

use self::callers::Plan;
use crate::cli;
use crate::measure::{self, Watched};
use crate::report;

/// The client under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// `mcp-streamable-client`.
    Ours,
    /// rmcp's client as `StreamableHttpClientTransport::from_config` builds it.
    Rmcp,
    /// rmcp's client over a reqwest client that keeps its connections.
    RmcpPooled,
}

impl Which {
    /// Its `--client` value, which the report carries.
    fn key(self) -> &'static str {
        match self {
            Which::Ours => "ours",
            Which::Rmcp => "rmcp",
            Which::RmcpPooled => "rmcp-pooled",
        }
    }
}

/// A client library's throughput: many callers sharing one MCP session, on one thread.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-client-load")]
pub struct Args {
    /// The echo server's MCP endpoint.
    #[arg(long)]
    pub url: String,
    /// The client library under test.
    #[arg(long, value_enum)]
    pub client: Which,
    /// Callers, tasks sharing the one session.
    #[arg(long, default_value_t = 16, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub callers: usize,
    /// Seconds measured, fractions allowed.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = cli::seconds)]
    pub duration: Duration,
    /// Seconds of warm-up before the window.
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = cli::seconds)]
    pub warmup: Duration,
    /// The server's process, for its CPU time.
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// Prints one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `mcp-client-load`.
pub fn run(args: Args) -> anyhow::Result<()> {
    // One thread: the client gets one core, and CPU per request compares across clients.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let plan = Plan {
        callers: args.callers,
        window: measure::Plan {
            warmup: args.warmup,
            duration: args.duration,
            watched: Watched {
                server_pids: args.server_pid.into_iter().collect(),
                side_pids: Vec::new(),
            },
        },
    };
    let measured = runtime.block_on(async {
        match args.client {
            Which::Ours => ours::run(&args.url, &plan).await,
            Which::Rmcp => rmcp::run(&args.url, &plan, rmcp::Pool::RmcpDefault).await,
            Which::RmcpPooled => rmcp::run(&args.url, &plan, rmcp::Pool::KeepAlive).await,
        }
    })?;
    let report = measured
        .window
        .report(measured.tally, args.callers, 1, Some(args.client.key()));
    report::print(&report, args.json)
}
