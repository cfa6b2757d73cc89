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
//! (`ClientReport` in `common/report.rs`) instead of text.
//!
//! [`Family::Session`]: mcp_streamable_client::Family::Session

#[path = "../common/report.rs"]
#[allow(dead_code, reason = "shared: the other binaries print other reports")]
mod report;

#[path = "../mcp_load/errors.rs"]
mod errors;

#[path = "../common/parse.rs"]
mod parse;

#[path = "../mcp_load/procfs.rs"]
#[allow(dead_code, reason = "shared with `mcp-load`, which reads memory too")]
mod procfs;

mod measure;
mod ours;
mod rmcp;
mod sockets;

use crate::parse::{number, seconds};

use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::measure::Plan;
use crate::report::ClientReport;

/// What `--help` and a bad argument print.
const USAGE: &str = "usage: mcp-client-load --url URL --client ours|rmcp|rmcp-pooled \
                     [--callers C] [--duration SECS] [--warmup SECS] [--server-pid PID] [--json]";

/// The client under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
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

/// The command line.
#[derive(Debug)]
struct Options {
    url: String,
    client: Option<Which>,
    callers: usize,
    duration: Duration,
    warmup: Duration,
    server_pid: Option<u32>,
    json: bool,
}

/// Reads the command line.
fn parse_args() -> anyhow::Result<Options> {
    let mut options = Options {
        url: String::new(),
        client: None,
        callers: 16,
        duration: Duration::from_secs(5),
        warmup: Duration::from_secs(1),
        server_pid: None,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--url" => options.url = value()?,
            "--client" => {
                options.client = Some(match value()?.as_str() {
                    "ours" => Which::Ours,
                    "rmcp" => Which::Rmcp,
                    "rmcp-pooled" => Which::RmcpPooled,
                    other => bail!("unknown --client {other:?}: ours, rmcp or rmcp-pooled"),
                });
            }
            "--callers" => options.callers = number(&arg, &value()?)?,
            "--duration" => options.duration = seconds(&arg, &value()?)?,
            "--warmup" => options.warmup = seconds(&arg, &value()?)?,
            "--server-pid" => options.server_pid = Some(number(&arg, &value()?)?),
            "--json" => options.json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    if options.url.is_empty() || options.client.is_none() {
        bail!("--url and --client are required\n{USAGE}");
    }
    if options.callers == 0 {
        bail!("--callers must be at least 1");
    }
    Ok(options)
}

fn main() -> anyhow::Result<()> {
    let options = parse_args()?;
    let which = options.client.context("--client is required")?;
    // One thread: the client gets one core, and CPU per request compares across clients.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let plan = Plan {
        callers: options.callers,
        warmup: options.warmup,
        duration: options.duration,
        server_pid: options.server_pid,
    };
    let measured = runtime.block_on(async {
        match which {
            Which::Ours => ours::run(&options.url, &plan).await,
            Which::Rmcp => rmcp::run(&options.url, &plan, rmcp::Pool::RmcpDefault).await,
            Which::RmcpPooled => rmcp::run(&options.url, &plan, rmcp::Pool::KeepAlive).await,
        }
    })?;
    let report = measured.into_report(which.key(), options.callers);
    if options.json {
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
