//! `mcp-load`: the load generator of the load benchmark.
//!
//! ```text
//! mcp-load --url URL [--mode calls] [--concurrency C] [--duration T] [--warmup W]
//!          [--server-pid PID ...] [--side-pid NAME=PID ...] [--protocol 2026-07-28] [--json]
//! mcp-load --url URL --mode idle --server-pid PID [--sessions N] [--close] [--json]
//! mcp-load --url URL --mode stream --server-pid PID [--notifications N] [--batch K] [--json]
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
//!
//! `--bearer TOKEN` sends `Authorization: Bearer TOKEN` on every request, for a protected
//! server; with `--dpop-key FILE --dpop-htu URL`, `Authorization: DPoP TOKEN` and a fresh DPoP
//! proof on every POST, signed with the P-256 key of FILE (PKCS#8 PEM), for `htu` URL.
//!
//! `--json` prints one JSON object (see `common/report.rs`) instead of text.

#[path = "../common/report.rs"]
#[allow(dead_code, reason = "shared: `mcp-client-load` prints another report")]
mod report;

#[path = "../common/parse.rs"]
mod parse;

mod calls;
mod dpop;
mod errors;
mod idle;
mod per_request;
mod procfs;
mod reply;
mod session;
mod stream;

use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::parse::{number, seconds};
use crate::report::{CallsReport, IdleReport, StreamReport};
use crate::session::Target;

const USAGE: &str = "usage: mcp-load --url URL [--mode calls|idle|stream] [--concurrency C] \
                     [--duration SECS] [--warmup SECS] [--server-pid PID ...] \
                     [--side-pid NAME=PID ...] [--sessions N] \
                     [--close] [--notifications N] [--batch K] [--protocol 2026-07-28] \
                     [--bearer TOKEN [--dpop-key FILE --dpop-htu URL]] [--json]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Calls,
    Idle,
    Stream,
}

#[derive(Debug)]
struct Options {
    url: String,
    mode: Mode,
    concurrency: usize,
    duration: Duration,
    warmup: Duration,
    /// The server's processes (the first for `idle` and `stream`).
    server_pids: Vec<u32>,
    /// Other processes whose CPU per request is reported apart, by name.
    side_pids: Vec<(String, u32)>,
    sessions: usize,
    close: bool,
    notifications: u64,
    batch: u64,
    json: bool,
    bearer: Option<String>,
    /// `--dpop-key FILE` and `--dpop-htu URL`: the bearer token sent as a DPoP-bound one.
    dpop_key: Option<String>,
    dpop_htu: Option<String>,
    /// `--protocol 2026-07-28`: calls the per-request way, without sessions.
    per_request: bool,
}

fn parse_args() -> anyhow::Result<Options> {
    let mut options = Options {
        url: String::new(),
        mode: Mode::Calls,
        concurrency: 16,
        duration: Duration::from_secs(5),
        warmup: Duration::from_secs(1),
        server_pids: Vec::new(),
        side_pids: Vec::new(),
        sessions: 10_000,
        close: false,
        notifications: 1_000_000,
        batch: 5_000,
        bearer: None,
        dpop_key: None,
        dpop_htu: None,
        json: false,
        per_request: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--url" => options.url = value()?,
            "--mode" => {
                options.mode = match value()?.as_str() {
                    "calls" => Mode::Calls,
                    "idle" => Mode::Idle,
                    "stream" => Mode::Stream,
                    other => bail!("unknown --mode {other:?}: calls, idle or stream"),
                }
            }
            "--concurrency" => options.concurrency = number(&arg, &value()?)?,
            "--duration" => options.duration = seconds(&arg, &value()?)?,
            "--warmup" => options.warmup = seconds(&arg, &value()?)?,
            "--server-pid" => options.server_pids.push(number(&arg, &value()?)?),
            "--side-pid" => {
                let value = value()?;
                let (name, pid) = value
                    .split_once('=')
                    .with_context(|| format!("--side-pid takes NAME=PID, not {value:?}"))?;
                options
                    .side_pids
                    .push((name.to_owned(), number(&arg, pid)?));
            }
            "--sessions" => options.sessions = number(&arg, &value()?)?,
            "--close" => options.close = true,
            "--notifications" => options.notifications = number(&arg, &value()?)?,
            "--batch" => options.batch = number(&arg, &value()?)?,
            "--json" => options.json = true,
            "--bearer" => options.bearer = Some(value()?),
            "--dpop-key" => options.dpop_key = Some(value()?),
            "--dpop-htu" => options.dpop_htu = Some(value()?),
            "--protocol" => {
                let version = value()?;
                if version != per_request::VERSION.as_str() {
                    bail!(
                        "--protocol takes {} (the per-request protocol), not {version:?}: \
                         without it, sessions of 2025-06-18",
                        per_request::VERSION.as_str()
                    );
                }
                options.per_request = true;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    if options.url.is_empty() {
        bail!("--url is required\n{USAGE}");
    }
    if options.per_request && options.mode != Mode::Calls {
        bail!("--protocol 2026-07-28 has no sessions: it goes with --mode calls only");
    }
    if options.concurrency == 0 || options.sessions < 2 || options.batch == 0 {
        bail!("--concurrency and --batch must be at least 1, --sessions at least 2");
    }
    Ok(options)
}

fn main() -> anyhow::Result<()> {
    let options = parse_args()?;
    let mut target = Target::parse(&options.url)?;
    match (&options.bearer, &options.dpop_key, &options.dpop_htu) {
        (Some(token), None, None) => target = target.bearer(token)?,
        (Some(token), Some(key), Some(htu)) => {
            target = target.dpop(token, dpop::Prover::new(key, htu, token)?)?;
        }
        (None, None, None) => {}
        _ => anyhow::bail!("--dpop-key and --dpop-htu go together, with --bearer"),
    }
    if options.per_request {
        target = target.per_request();
    }
    // One thread: the load generator gets one core, and this is the cheapest way to use it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pid = || {
        options
            .server_pids
            .first()
            .copied()
            .with_context(|| "this mode needs --server-pid")
    };
    match options.mode {
        Mode::Calls => {
            let plan = calls::Plan {
                target,
                concurrency: options.concurrency,
                warmup: options.warmup,
                duration: options.duration,
                server_pids: options.server_pids.clone(),
                side_pids: options.side_pids.clone(),
            };
            let report = runtime.block_on(calls::run(plan))?;
            print(&options, &report, print_calls)
        }
        Mode::Idle => {
            let report =
                runtime.block_on(idle::run(target, options.sessions, options.close, pid()?))?;
            print(&options, &report, print_idle)
        }
        Mode::Stream => {
            let report = runtime.block_on(stream::run(
                target,
                options.notifications,
                options.batch,
                pid()?,
            ))?;
            print(&options, &report, print_stream)
        }
    }
}

fn print<R: serde::Serialize>(options: &Options, report: &R, text: fn(&R)) -> anyhow::Result<()> {
    if options.json {
        println!("{}", serde_json::to_string(report)?);
    } else {
        text(report);
    }
    Ok(())
}

fn print_calls(r: &CallsReport) {
    println!(
        "{} sessions ({} ran), {:.2} s: {} requests, {:.0} req/s ({} JSON, {} SSE)",
        r.concurrency, r.sessions_ok, r.seconds, r.requests, r.rps, r.json_replies, r.sse_replies
    );
    println!(
        "latency: p50 {:.0} us, p99 {:.0} us, max {:.0} us",
        r.p50_us, r.p99_us, r.max_us
    );
    if let (Some(per_req), Some(share)) = (r.server_cpu_us_per_req, r.server_cpu_share) {
        println!(
            "server CPU: {per_req:.1} us/request ({:.0}% of a core)",
            share * 100.0
        );
    }
    for (name, per_req) in &r.side_cpu_us_per_req {
        println!("{name} CPU: {per_req:.1} us/request");
    }
    println!(
        "load generator CPU: {:.1} us/request ({:.0}% of a core)",
        r.client_cpu_us_per_req,
        r.client_cpu_share * 100.0
    );
    print_errors(r.errors, &r.error_samples);
}

fn print_idle(r: &IdleReport) {
    println!(
        "{} idle sessions ({} opened, connections {}): VmRSS {} KiB -> {} KiB, {:.2} KiB per session",
        r.sessions,
        r.sessions_ok,
        if r.closed_connections {
            "closed"
        } else {
            "open"
        },
        r.rss_before_kib,
        r.rss_after_kib,
        r.kib_per_session
    );
    print_errors(r.errors, &r.error_samples);
}

fn print_stream(r: &StreamReport) {
    println!(
        "{} of {} notifications in {:.2} s ({:.0}/s); VmRSS growth after the first 10,000: {:+.1}%",
        r.received, r.notifications, r.seconds, r.per_second, r.growth_percent
    );
    let samples: Vec<String> = r
        .rss_samples_kib
        .iter()
        .map(|(n, kib)| format!("{n}: {kib} KiB"))
        .collect();
    println!("VmRSS: {}", samples.join(", "));
    print_errors(r.errors, &r.error_samples);
}

fn print_errors(count: u64, samples: &[String]) {
    println!("errors: {count}");
    for sample in samples {
        println!("  {sample}");
    }
}
