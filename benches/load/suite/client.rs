//! Client throughput: our client library beside rmcp's, many callers on one session each,
//! against our echo server; `mcp-client-load` runs, interleaved, and their table.

use std::fmt::Write as _;

use anyhow::Context as _;

use super::figures::ratio;
use super::kinds;
use super::quiet::Quiet;
use super::servers::Launcher;
use crate::report::CallsReport;
use crate::stats::median;

/// A client library the section can measure.
#[derive(Debug)]
pub(crate) struct ClientKind {
    /// `mcp-client-load --client KEY`, and `--clients` of the suite.
    pub(crate) key: &'static str,
    /// What the table calls it.
    label: &'static str,
    /// What it is, for the notes under the table.
    description: &'static str,
}

/// Every client the section knows, in table order.
pub(crate) const CLIENTS: &[ClientKind] = &[
    ClientKind {
        key: "ours",
        label: "ours",
        description: "`mcp_streamable_client::Client` pinned to `Family::Session`, its \
                      telemetry off (`Telemetry::off`: the load generator installs no \
                      OpenTelemetry provider), its defaults otherwise: its own pool of its own \
                      HTTP/1.1 connections (keep-alive, `TCP_NODELAY`), each driven by the task \
                      that uses it, so each POST in flight takes a pooled connection, and the \
                      standalone GET stream on; driven through the `mcp_transport` traits, the \
                      sender shared by the callers and one task handing each response to its \
                      caller by id",
    },
    ClientKind {
        key: "rmcp",
        label: "rmcp 3.11.0",
        description: "rmcp's own client (`serve`, then `call_tool` on the `RunningService`) \
                      over `StreamableHttpClientTransport::from_config`, \
                      `max_concurrent_requests` = callers: its default reqwest client keeps no \
                      idle connection (`pool_max_idle_per_host(0)`), so every POST opens a new \
                      TCP connection; `TCP_NODELAY` (reqwest's default); rmcp always opens the \
                      standalone GET stream",
    },
    ClientKind {
        key: "rmcp-pooled",
        label: "rmcp 3.11.0, reqwest pool",
        description: "the same rmcp client over a reqwest client with reqwest's default pool \
                      (idle connections kept, `TCP_NODELAY`): what rmcp costs without a new \
                      connection per POST",
    },
];

/// What to run.
#[derive(Debug)]
pub(crate) struct Plan<'a> {
    /// The clients, in table order.
    pub(crate) clients: &'a [&'static ClientKind],
    /// Concurrent callers on the one session.
    pub(crate) callers: usize,
    /// Runs of each client.
    pub(crate) runs: usize,
    /// Measured seconds per run.
    pub(crate) duration: f64,
    /// Seconds of warm-up per run.
    pub(crate) warmup: f64,
}

/// The runs of one client.
#[derive(Debug)]
pub(crate) struct ClientRuns {
    /// The client.
    client: &'static ClientKind,
    /// Its runs that reported.
    runs: Vec<CallsReport>,
}

/// The medians of a client's runs (errors are summed).
#[derive(Debug, Clone, Copy)]
struct Summary {
    /// Requests per second.
    rps: f64,
    /// Latency percentiles and maximum, in microseconds.
    p50: f64,
    p99: f64,
    max: f64,
    /// The client's CPU per request (µs) and its share of a core.
    client_cpu: f64,
    client_share: f64,
    /// The server's CPU per request, in microseconds.
    server_cpu: Option<f64>,
    /// TCP connections opened in the window.
    connects: Option<f64>,
    /// The sum over the runs.
    errors: u64,
}

impl ClientRuns {
    /// The medians of the runs.
    fn summary(&self) -> Summary {
        let median_of = |f: fn(&CallsReport) -> f64| median(self.runs.iter().map(f).collect());
        let median_some = |f: fn(&CallsReport) -> Option<f64>| {
            let values: Vec<f64> = self.runs.iter().filter_map(f).collect();
            (!values.is_empty()).then(|| median(values))
        };
        Summary {
            rps: median_of(|r| r.rps),
            p50: median_of(|r| r.p50_us),
            p99: median_of(|r| r.p99_us),
            max: median_of(|r| r.max_us),
            client_cpu: median_of(|r| r.client_cpu_us_per_req),
            client_share: median_of(|r| r.client_cpu_share),
            server_cpu: median_some(|r| r.server_cpu_us_per_req),
            connects: median_some(|r| r.tcp_connects.map(|n| n as f64)),
            errors: self.runs.iter().map(|r| r.errors).sum(),
        }
    }
}

/// Starts our echo server (as users run it) and runs each client `runs` times, interleaved.
pub(crate) fn measure(
    launcher: &Launcher,
    plan: &Plan<'_>,
    quiet: &mut Quiet,
) -> anyhow::Result<Vec<ClientRuns>> {
    let kind = kinds::find("ours").context("a known server")?;
    let server = launcher.start(kind)?;
    let mut results: Vec<ClientRuns> = plan
        .clients
        .iter()
        .map(|&client| ClientRuns {
            client,
            runs: Vec::new(),
        })
        .collect();
    for run in 1..=plan.runs {
        for entry in &mut results {
            quiet.wait();
            let args = [
                "--url".to_owned(),
                server.url.clone(),
                "--client".to_owned(),
                entry.client.key.to_owned(),
                "--callers".to_owned(),
                plan.callers.to_string(),
                "--duration".to_owned(),
                plan.duration.to_string(),
                "--warmup".to_owned(),
                plan.warmup.to_string(),
                "--server-pid".to_owned(),
                server.pid.to_string(),
            ];
            match launcher.generate::<CallsReport>("mcp-client-load", &args) {
                Ok(report) => {
                    eprintln!(
                        "run {run}, client {:<24} {:>7.0} req/s  p99 {:>6.0} µs  client CPU \
                         {:>5.1} µs/req  server CPU {:>5.1} µs/req  connects {:>6}  errors {}",
                        entry.client.label,
                        report.rps,
                        report.p99_us,
                        report.client_cpu_us_per_req,
                        report.server_cpu_us_per_req.unwrap_or(f64::NAN),
                        report
                            .tcp_connects
                            .map_or_else(|| "?".to_owned(), |n| n.to_string()),
                        report.errors
                    );
                    for sample in &report.error_samples {
                        eprintln!("    {sample}");
                    }
                    entry.runs.push(report);
                }
                Err(err) => eprintln!("run {run}, client {}: {err:#}", entry.client.label),
            }
        }
    }
    results.retain(|r| !r.runs.is_empty());
    Ok(results)
}

/// The section of the report: what was run, the table of medians, the ratios, the clients.
pub(crate) fn section(results: &[ClientRuns], plan: &Plan<'_>) -> String {
    let mut out = format!(
        "`mcp-client-load` (one thread, a `current_thread` tokio runtime, pinned where the load \
         generator goes) against `examples/echo_server` as users run it (stateful, SSE \
         replies, event store on), freshly started for the section: each run is one client \
         with one session (`initialize` asking for 2025-11-25, `notifications/initialized`), \
         then {callers} callers, tasks sharing that one session, each calling `tools/call \
         echo` with a unique text in a closed loop, every result checked to be its own text. \
         {warmup} s of warm-up, then {duration} s measured; {runs} run(s) of each client, \
         interleaved; the table gives the medians of the runs (errors: the sum). Client CPU is \
         `utime + stime` of the client's own process over the window, per request and as a \
         share of its one core (near 100% the client is the limit); server CPU likewise from \
         `/proc/PID/stat`. Connections opened: TCP connects on the machine during the window \
         (`ActiveOpens`, `/proc/net/snmp`).\n\n",
        callers = plan.callers,
        warmup = plan.warmup,
        duration = plan.duration,
        runs = plan.runs,
    );
    if results.is_empty() {
        out += "No client ran.\n";
        return out;
    }
    out += "| client | callers | req/s | p50 µs | p99 µs | max µs | client CPU µs/req | client \
            CPU | server CPU µs/req | connections opened | errors |\n\
            |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    for entry in results {
        let s = entry.summary();
        let server_cpu = s
            .server_cpu
            .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.1}"));
        let connects = s
            .connects
            .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.0}"));
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0}% | {server_cpu} | \
             {connects} | {} |",
            entry.client.label,
            plan.callers,
            s.rps,
            s.p50,
            s.p99,
            s.max,
            s.client_cpu,
            s.client_share * 100.0,
            s.errors
        );
    }
    let ours = results.iter().find(|r| r.client.key == "ours");
    let others: Vec<&ClientRuns> = results.iter().filter(|r| r.client.key != "ours").collect();
    if let Some(ours) = ours.filter(|_| !others.is_empty()) {
        let me = ours.summary();
        out += "\n| ours ÷ | req/s | client CPU/req | p99 |\n|---|--:|--:|--:|\n";
        for other in others {
            let them = other.summary();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                other.client.label,
                ratio(me.rps, them.rps),
                ratio(me.client_cpu, them.client_cpu),
                ratio(me.p99, them.p99),
            );
        }
    }
    out += "\nThe clients:\n\n";
    for entry in results {
        let _ = writeln!(
            out,
            "- {}: {}.",
            entry.client.label, entry.client.description
        );
    }
    out
}
