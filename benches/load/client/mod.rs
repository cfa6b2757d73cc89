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
//! - `ours`: `mcp_streamable_client::Client`, pinned to [`Family::Session`], its defaults
//!   otherwise (pooled HTTP/1.1 keep-alive connections, `TCP_NODELAY`, the standalone GET
//!   stream on), driven through the `mcp_transport` traits: one task receives and hands each
//!   response to its caller by id.
//! - `rmcp`: rmcp 3.11.0's own client (`().serve(transport)`, `call_tool`) over its
//!   `StreamableHttpClientTransport` as `from_config` builds it: its default reqwest client,
//!   which keeps no idle connection (`pool_max_idle_per_host(0)`), so each POST opens a new one.
//! - `rmcp-pooled`: the same over a reqwest client with reqwest's default pool, which keeps
//!   connections alive as ours does.
//!
//! Reports requests per second, p50, p99 and max latency, errors, the client's own CPU time
//! per request (`utime + stime` of `/proc/self/stat` over the window), with `--server-pid` the
//! server's, and the TCP connections opened in the window. `--json` prints one JSON object
//! (`ClientReport` in `report.rs`) instead of text.
//!
//! [`Family::Session`]: mcp_streamable_client::Family::Session

mod measure;
mod ours;
mod rmcp;

use std::time::Duration;

use clap::builder::RangedU64ValueParser;

use self::measure::Plan;
use crate::cli;
use crate::report::ClientReport;

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
        warmup: args.warmup,
        duration: args.duration,
        server_pid: args.server_pid,
    };
    let measured = runtime.block_on(async {
        match args.client {
            Which::Ours => ours::run(&args.url, &plan).await,
            Which::Rmcp => rmcp::run(&args.url, &plan, rmcp::Pool::RmcpDefault).await,
            Which::RmcpPooled => rmcp::run(&args.url, &plan, rmcp::Pool::KeepAlive).await,
        }
    })?;
    let report = measured.into_report(args.client.key(), args.callers);
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_text(&report);
    }
    Ok(())
}

/// The report for a person.
fn print_text(r: &ClientReport) {
    println!(
        "{}: {} callers on one session, {:.2} s: {} requests, {:.0} req/s",
        r.client, r.callers, r.seconds, r.requests, r.rps
    );
    println!(
        "latency: p50 {:.0} us, p99 {:.0} us, max {:.0} us",
        r.p50_us, r.p99_us, r.max_us
    );
    println!(
        "client CPU: {:.1} us/request ({:.0}% of a core)",
        r.client_cpu_us_per_req,
        r.client_cpu_share * 100.0
    );
    if let (Some(per_req), Some(share)) = (r.server_cpu_us_per_req, r.server_cpu_share) {
        println!(
            "server CPU: {per_req:.1} us/request ({:.0}% of a core)",
            share * 100.0
        );
    }
    let or_unknown = |n: Option<u64>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
    println!(
        "TCP connections opened in the window: {}; client sockets open mid-window: {}",
        or_unknown(r.tcp_connects),
        or_unknown(r.sockets_open)
    );
    println!("errors: {}", r.errors);
    for sample in &r.error_samples {
        println!("  {sample}");
    }
}
