//! The results as markdown: medians of the runs, ratios, targets, memory.

use std::fmt::Write as _;

use crate::client::ClientRuns;
use crate::report::{CallsReport, IdleReport, StreamReport};
use crate::servers::ServerKind;

/// Everything the suite measured.
#[derive(Debug, Default)]
pub(crate) struct Results {
    /// The runs of each server at each concurrency.
    pub(crate) calls: Vec<Cell>,
    /// Idle sessions: the server's label and the report.
    pub(crate) idle: Vec<(&'static str, IdleReport)>,
    /// The standalone-stream check.
    pub(crate) stream: Option<StreamReport>,
    /// Client throughput: each client's runs (`None`: not run).
    pub(crate) clients: Option<Vec<ClientRuns>>,
}

/// The runs of one server at one concurrency.
#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) server: &'static ServerKind,
    pub(crate) concurrency: usize,
    pub(crate) runs: Vec<CallsReport>,
}

/// The medians of a cell's runs (errors are summed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    pub(crate) rps: f64,
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
    pub(crate) cpu: Option<f64>,
    pub(crate) gen_share: f64,
    pub(crate) errors: u64,
}

impl Cell {
    pub(crate) fn summary(&self) -> Summary {
        let median_of = |f: fn(&CallsReport) -> f64| median(self.runs.iter().map(f).collect());
        let cpu: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| r.server_cpu_us_per_req)
            .collect();
        Summary {
            rps: median_of(|r| r.rps),
            p50: median_of(|r| r.p50_us),
            p99: median_of(|r| r.p99_us),
            max: median_of(|r| r.max_us),
            cpu: (!cpu.is_empty()).then(|| median(cpu)),
            gen_share: median_of(|r| r.client_cpu_share),
            errors: self.runs.iter().map(|r| r.errors).sum(),
        }
    }
}

impl Results {
    fn find(&self, key: &str, concurrency: usize) -> Option<Summary> {
        self.calls
            .iter()
            .find(|c| c.server.key == key && c.concurrency == concurrency)
            .map(Cell::summary)
    }

    fn concurrencies(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.calls.iter().map(|c| c.concurrency).collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// The median of `values` (NaN for none).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// `a / b` as `1.23x`, or `n/a`.
pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() {
        format!("{:.2}x", a / b)
    } else {
        "n/a".to_owned()
    }
}

fn mark(ok: bool) -> &'static str {
    if ok { "met" } else { "**missed**" }
}

/// The throughput table: one row per server and concurrency.
pub(crate) fn calls_table(results: &Results) -> String {
    let mut out = String::from(
        "| server | sessions | req/s | p50 µs | p99 µs | max µs | server CPU µs/req | \
         load gen. CPU | errors |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for cell in &results.calls {
        let s = cell.summary();
        let cpu = s
            .cpu
            .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.1}"));
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {cpu} | {:.0}% | {} |",
            cell.server.label,
            cell.concurrency,
            s.rps,
            s.p50,
            s.p99,
            s.max,
            s.gen_share * 100.0,
            s.errors
        );
    }
    out
}

/// Ours (each configuration) against rmcp and against the ceiling, at each concurrency.
pub(crate) fn ratios_table(results: &Results) -> String {
    let ours: Vec<&ServerKind> = results
        .calls
        .iter()
        .map(|c| c.server)
        .filter(|s| s.key.starts_with("ours"))
        .fold(Vec::new(), |mut seen, s| {
            if !seen.iter().any(|x: &&ServerKind| x.key == s.key) {
                seen.push(s);
            }
            seen
        });
    let mut out = String::from(
        "| sessions | ours | req/s ÷ rmcp | req/s ÷ ceiling | CPU/req ÷ rmcp | CPU/req ÷ \
         ceiling | p99 ÷ rmcp |\n|--:|---|--:|--:|--:|--:|--:|\n",
    );
    for c in results.concurrencies() {
        let (rmcp, ceiling) = (results.find("rmcp", c), results.find("ceiling", c));
        for server in &ours {
            let Some(me) = results.find(server.key, c) else {
                continue;
            };
            let cpu = |other: Option<Summary>| match (me.cpu, other.and_then(|o| o.cpu)) {
                (Some(a), Some(b)) => ratio(a, b),
                _ => "n/a".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {c} | {} | {} | {} | {} | {} | {} |",
                server.label,
                rmcp.map_or_else(|| "n/a".to_owned(), |r| ratio(me.rps, r.rps)),
                ceiling.map_or_else(|| "n/a".to_owned(), |r| ratio(me.rps, r.rps)),
                cpu(rmcp),
                cpu(ceiling),
                rmcp.map_or_else(|| "n/a".to_owned(), |r| ratio(me.p99, r.p99)),
            );
        }
    }
    out
}

/// The targets, for "ours, stateful, SSE", at 16 and 64 sessions, and idle memory.
pub(crate) fn targets(results: &Results) -> String {
    let mut out = String::new();
    for c in [16, 64] {
        let (Some(me), Some(rmcp)) = (results.find("ours", c), results.find("rmcp", c)) else {
            continue;
        };
        let cpu = me.cpu.unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "- {c} sessions: req/s {:.2}x rmcp (target ≥ 2x: {}); server CPU {cpu:.1} µs/req \
             (target ≤ 20: {}); p99 {:.0} µs vs rmcp {:.0} µs (target ≤ rmcp: {})",
            me.rps / rmcp.rps,
            mark(me.rps >= 2.0 * rmcp.rps),
            mark(cpu <= 20.0),
            me.p99,
            rmcp.p99,
            mark(me.p99 <= rmcp.p99),
        );
    }
    for (label, idle) in &results.idle {
        if label.starts_with("ours") && idle.closed_connections {
            let _ = writeln!(
                out,
                "- idle sessions, {label}, connections closed: {:.2} KiB each (target ≤ 5: {})",
                idle.kib_per_session,
                mark(idle.kib_per_session <= 5.0)
            );
        }
    }
    if let Some(stream) = &results.stream {
        let _ = writeln!(
            out,
            "- standalone stream: resident memory after {} notifications {:+.1}% of that after \
             10,000 (target within ±10%: {})",
            stream.received,
            stream.growth_percent,
            mark(stream.growth_percent.abs() <= 10.0 && stream.received == stream.notifications)
        );
    }
    out
}

/// Resident memory per idle session.
pub(crate) fn idle_table(results: &Results) -> String {
    let mut out = String::from(
        "| server | connections | sessions | VmRSS before | VmRSS after | KiB per session | \
         errors |\n|---|---|--:|--:|--:|--:|--:|\n",
    );
    for (label, r) in &results.idle {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} KiB | {} KiB | {:.2} | {} |",
            if r.closed_connections {
                "closed after initialize"
            } else {
                "kept open"
            },
            r.sessions_ok,
            r.rss_before_kib,
            r.rss_after_kib,
            r.kib_per_session,
            r.errors
        );
    }
    out
}

/// The standalone-stream check.
pub(crate) fn stream_section(stream: &StreamReport) -> String {
    let samples: Vec<String> = stream
        .rss_samples_kib
        .iter()
        .map(|(n, kib)| format!("{n}: {kib} KiB"))
        .collect();
    format!(
        "{} of {} notifications received in order in {:.1} s ({:.0}/s), {} errors. Resident \
         memory after the first 10,000 to the end: {:+.1}%.\n\nVmRSS by notifications \
         received: {}.\n",
        stream.received,
        stream.notifications,
        stream.seconds,
        stream.per_second,
        stream.errors,
        stream.growth_percent,
        samples.join(", ")
    )
}
