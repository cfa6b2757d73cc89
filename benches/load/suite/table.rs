//! The results as markdown: medians of the runs, ratios, targets, memory.

use std::fmt::Write as _;

use super::cells::Summary;
use super::figures::{ratio, verdict};
use super::kinds::{Family, Peer, ServerKind};
use super::results::Results;
use crate::report::StreamReport;

/// The throughput table: one row per server and concurrency.
pub(crate) fn calls_table(results: &Results) -> String {
    let mut out = String::from(
        "| server | sessions | req/s | p50 µs | p99 µs | max µs | server CPU µs/req | \
         load gen. CPU | replies | errors |\n|---|--:|--:|--:|--:|--:|--:|--:|---|--:|\n",
    );
    for cell in results.calls.iter() {
        let s = cell.summary();
        let cpu = s
            .cpu
            .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.1}"));
        let replies = match (s.json, s.sse) {
            (0, 0) => "none",
            (_, 0) => "JSON",
            (0, _) => "SSE",
            _ => "JSON and SSE",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {cpu} | {:.0}% | {replies} | {} |",
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

/// What the OTLP sink of each server exporting to one received, a paragraph each: the proof
/// that its row measured exporting, and whether the spans kept up with the requests.
pub(crate) fn exported_notes(results: &Results) -> String {
    let mut out = String::new();
    for (server, received) in &results.exported {
        let requests: u64 = results
            .calls
            .iter()
            .filter(|cell| cell.server.key == server.key)
            .flat_map(|cell| &cell.runs)
            .map(|run| run.requests)
            .sum();
        let per_request = if requests > 0 {
            format!("{:.2}", received.spans as f64 / requests as f64)
        } else {
            "n/a".to_owned()
        };
        let logs = if received.logs.exports > 0 {
            format!(", {} log exports", received.logs.exports)
        } else {
            String::new()
        };
        let refused = if received.refused > 0 {
            format!(
                ", and refused {} requests that were no export",
                received.refused
            )
        } else {
            String::new()
        };
        let verdict = if received.traces.bytes == 0 {
            "**no span arrived: the row measured no exporting**"
        } else {
            "every run kept had spans arrive during it"
        };
        let _ = writeln!(
            out,
            "
{}: its OTLP sink received {} spans in {} trace exports ({:.1} MiB) and {} \
             metrics exports ({:.1} KiB){logs}{refused} over the runs, against {requests} requests \
             answered in the measured windows: {per_request} spans a request (the warm-ups' \
             requests and the sessions' `initialize` have spans too, and are not among the \
             requests); {verdict}.",
            server.label,
            received.spans,
            received.traces.exports,
            received.traces.bytes as f64 / 1_048_576.0,
            received.metrics.exports,
            received.metrics.bytes as f64 / 1024.0,
        );
    }
    out
}

/// Our servers, each once, in table order.
fn ours(results: &Results) -> Vec<&'static ServerKind> {
    let mut seen: Vec<&'static ServerKind> = Vec::new();
    for cell in results.calls.iter() {
        if cell.server.peer == Peer::Ours && !seen.iter().any(|s| s.key == cell.server.key) {
            seen.push(cell.server);
        }
    }
    seen
}

/// `me ÷ other` of requests per second and of CPU per request, `n/a` where either is missing.
fn ratios(me: Summary, other: Option<Summary>) -> (String, String) {
    let Some(other) = other else {
        return ("n/a".to_owned(), "n/a".to_owned());
    };
    let cpu = match (me.cpu, other.cpu) {
        (Some(a), Some(b)) => ratio(a, b),
        _ => "n/a".to_owned(),
    };
    (ratio(me.rps, other.rps), cpu)
}

/// Ours (each configuration) against rmcp, tower-mcp and the ceiling of the same protocol
/// family, at each concurrency.
pub(crate) fn ratios_table(results: &Results) -> String {
    let mut out = String::from(
        "| sessions | ours | req/s ÷ rmcp | req/s ÷ tower-mcp | req/s ÷ ceiling | CPU/req ÷ \
         rmcp | CPU/req ÷ tower-mcp | CPU/req ÷ ceiling | p99 ÷ rmcp | p99 ÷ tower-mcp |\n\
         |--:|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for c in results.calls.concurrencies() {
        for server in ours(results) {
            let Some(me) = results.calls.find(server.key, c) else {
                continue;
            };
            let peer = |p: Peer| results.calls.find_peer(p, server.family, c);
            let (rmcp, tower, ceiling) =
                (peer(Peer::Rmcp), peer(Peer::TowerMcp), peer(Peer::Ceiling));
            let ((rps_r, cpu_r), (rps_t, cpu_t), (rps_c, cpu_c)) =
                (ratios(me, rmcp), ratios(me, tower), ratios(me, ceiling));
            let p99 =
                |o: Option<Summary>| o.map_or_else(|| "n/a".to_owned(), |o| ratio(me.p99, o.p99));
            let _ = writeln!(
                out,
                "| {c} | {} | {rps_r} | {rps_t} | {rps_c} | {cpu_r} | {cpu_t} | {cpu_c} | {} | {} |",
                server.label,
                p99(rmcp),
                p99(tower),
            );
        }
    }
    out
}

/// Ours ÷ the baseline's (`--baseline-echo-server`) of the same configuration, at each
/// concurrency: the A/B of one run, interleaved.
pub(crate) fn baseline_section(results: &Results, name: &str) -> String {
    let mut out = format!(
        "\n## Against the baseline\n\nOurs (this tree) ÷ {name}, each configuration against \
         the same one built from the baseline, in the same runs, interleaved; below 1 for CPU \
         per request and p99 is better, above 1 for requests per second.\n\n\
         | sessions | ours | req/s ÷ baseline | CPU/req ÷ baseline | p99 ÷ baseline |\n\
         |--:|---|--:|--:|--:|\n"
    );
    for c in results.calls.concurrencies() {
        for cell in results.calls.iter().filter(|cell| cell.concurrency == c) {
            let Some(of) = cell.server.baseline_of() else {
                continue;
            };
            let (Some(me), Some(base)) = (
                results.calls.find(of, c),
                results.calls.find(cell.server.key, c),
            ) else {
                continue;
            };
            let (rps, cpu) = ratios(me, Some(base));
            let label = super::kinds::find(of).map_or(of, |s| s.label);
            let _ = writeln!(
                out,
                "| {c} | {label} | {rps} | {cpu} | {} |",
                ratio(me.p99, base.p99)
            );
        }
    }
    out
}

/// One target line: `what` measured `value` against `bound` (`at_least` or at most).
fn target_line(what: &str, value: Option<f64>, bound: f64, at_least: bool) -> String {
    let sign = if at_least { "≥" } else { "≤" };
    match value {
        Some(v) if v.is_finite() => {
            let ok = if at_least { v >= bound } else { v <= bound };
            format!("{what} {v:.2}x (target {sign} {bound}x: {})", verdict(ok))
        }
        _ => format!("{what}: not measured (target {sign} {bound}x)"),
    }
}

/// Issue 29: with spans and metrics exported over OTLP, server CPU per request at most this
/// multiple of ours recording into the no-op providers, in the same runs.
const OTLP_CPU_TARGET: f64 = 1.05;

/// Issue 32: an rmcp handler served through `mcp-rmcp` on our server, at least this multiple
/// of the requests per second of the same handler on rmcp's own server...
const ADAPTED_RPS_TARGET: f64 = 2.0;
/// ...at most this multiple of its CPU per request.
const ADAPTED_CPU_TARGET: f64 = 0.5;

/// The issue's targets at 16 and 64 sessions, and idle memory; each a ratio of one run.
pub(crate) fn targets(results: &Results) -> String {
    let mut out = String::new();
    let rps = |me: Option<Summary>, o: Option<Summary>| Some(me?.rps / o?.rps);
    let cpu = |me: Option<Summary>, o: Option<Summary>| Some(me?.cpu? / o?.cpu?);
    for c in [16, 64] {
        if !results.calls.concurrencies().contains(&c) {
            continue;
        }
        let find = |p: Peer, f: Family| results.calls.find_peer(p, f, c);
        let ceiling = find(Peer::Ceiling, Family::Sessions);
        let me = results.calls.find("ours", c);
        let stateful = "ours, stateful, SSE:";
        let mut lines = vec![
            target_line(
                &format!("{stateful} req/s ÷ rmcp"),
                rps(me, find(Peer::Rmcp, Family::Sessions)),
                3.5,
                true,
            ),
            target_line(
                &format!("{stateful} req/s ÷ tower-mcp"),
                rps(me, find(Peer::TowerMcp, Family::Sessions)),
                3.0,
                true,
            ),
            target_line(
                &format!("{stateful} server CPU/req ÷ ceiling"),
                cpu(me, ceiling),
                1.3,
                false,
            ),
            target_line(
                "ours, JSON responses: server CPU/req ÷ ceiling",
                cpu(results.calls.find("ours-json", c), ceiling),
                1.3,
                false,
            ),
            target_line(
                "ours, stateless: server CPU/req ÷ ceiling",
                cpu(results.calls.find("ours-stateless", c), ceiling),
                1.3,
                false,
            ),
            target_line(
                "ours, 2026-07-28 per request: server CPU/req ÷ the ceiling sent the same requests",
                cpu(
                    results.calls.find("ours-26", c),
                    find(Peer::Ceiling, Family::PerRequest),
                ),
                1.3,
                false,
            ),
        ];
        if let Some(adapted) = results.calls.find("rmcp-on-ours", c) {
            let rmcp = find(Peer::Rmcp, Family::Sessions);
            let label = "rmcp's handler on ours (mcp-rmcp):";
            lines.push(target_line(
                &format!("{label} req/s ÷ the same handler on rmcp's server"),
                rps(Some(adapted), rmcp),
                ADAPTED_RPS_TARGET,
                true,
            ));
            lines.push(target_line(
                &format!("{label} server CPU/req ÷ the same handler on rmcp's server"),
                cpu(Some(adapted), rmcp),
                ADAPTED_CPU_TARGET,
                false,
            ));
        }
        for (key, what) in [
            ("ours-otlp", "ours, spans and metrics over OTLP"),
            ("ours-otlp-sampled", "ours, over OTLP, 1 trace in 10"),
        ] {
            if let (Some(otlp), Some(ours)) = (results.calls.find(key, c), me) {
                lines.push(target_line(
                    &format!("{what} (issue 29): server CPU/req ÷ ours"),
                    cpu(Some(otlp), Some(ours)),
                    OTLP_CPU_TARGET,
                    false,
                ));
            }
        }
        let _ = writeln!(out, "- {c} sessions:\n  - {}", lines.join("\n  - "));
    }
    for (label, idle) in &results.idle {
        if label.starts_with("ours") && idle.closed_connections {
            let _ = writeln!(
                out,
                "- idle sessions, {label}, connections closed: {:.2} KiB each (target ≤ 2.5: {})",
                idle.kib_per_session,
                verdict(idle.kib_per_session <= 2.5)
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
            verdict(stream.growth_percent.abs() <= 10.0 && stream.received == stream.notifications)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::CallsReport;
    use crate::suite::cells::{Calls, Cell};
    use crate::suite::kinds::find;
    use crate::suite::otlp_sink::{Received, Tally};

    fn cell(key: &str, rps: f64, cpu: f64, p99: f64) -> Cell {
        let run = CallsReport {
            concurrency: 16,
            rps,
            p99_us: p99,
            server_cpu_us_per_req: Some(cpu),
            ..CallsReport::default()
        };
        Cell {
            server: find(key).unwrap(),
            concurrency: 16,
            runs: vec![run],
        }
    }

    #[test]
    fn the_baseline_section_divides_ours_by_the_same_configuration_of_the_baseline() {
        let results = Results {
            calls: Calls::new(vec![
                cell("ours", 30_000.0, 15.0, 900.0),
                cell("base", 20_000.0, 20.0, 1_800.0),
                cell("ours-26", 10_000.0, 30.0, 2_000.0),
            ]),
            ..Results::default()
        };
        let section = baseline_section(&results, "abc123");
        assert!(section.contains("÷ abc123"), "{section}");
        assert!(
            section.contains("| 16 | ours, stateful, SSE | 1.50x | 0.75x | 0.50x |"),
            "{section}"
        );
        // No `base-26` ran: no row for the per-request configuration.
        assert!(!section.contains("2026-07-28"), "{section}");
    }

    #[test]
    fn issue_32s_adapter_targets_divide_the_adapted_handler_by_the_same_on_rmcp() {
        let both = Results {
            calls: Calls::new(vec![
                cell("rmcp", 20_000.0, 50.0, 1_500.0),
                cell("rmcp-on-ours", 30_000.0, 30.0, 900.0),
            ]),
            ..Results::default()
        };
        let written = targets(&both);
        let label = "rmcp's handler on ours (mcp-rmcp):";
        for line in [
            format!(
                "{label} req/s ÷ the same handler on rmcp's server 1.50x (target ≥ 2x: **missed**)"
            ),
            format!(
                "{label} server CPU/req ÷ the same handler on rmcp's server 0.60x (target ≤ 0.5x: **missed**)"
            ),
        ] {
            assert!(written.contains(&line), "{line} in {written}");
        }
        let alone = Results {
            calls: Calls::new(vec![cell("rmcp-on-ours", 30_000.0, 30.0, 900.0)]),
            ..Results::default()
        };
        let written = targets(&alone);
        assert!(
            written.contains(&format!(
                "{label} req/s ÷ the same handler on rmcp's server: not measured"
            )),
            "{written}"
        );
    }

    #[test]
    fn issue_29s_target_divides_the_otlp_row_by_ours_only_when_both_ran() {
        let both = Results {
            calls: Calls::new(vec![
                cell("ours", 30_000.0, 20.0, 900.0),
                cell("ours-otlp", 28_000.0, 22.0, 950.0),
            ]),
            ..Results::default()
        };
        let written = targets(&both);
        assert!(
            written.contains(
                "ours, spans and metrics over OTLP (issue 29): server CPU/req ÷ ours 1.10x \
                 (target ≤ 1.05x: **missed**)"
            ),
            "{written}"
        );
        for alone in ["ours", "ours-otlp"] {
            let results = Results {
                calls: Calls::new(vec![cell(alone, 30_000.0, 20.0, 900.0)]),
                ..Results::default()
            };
            assert!(!targets(&results).contains("issue 29"), "{alone}");
        }
    }

    #[test]
    fn the_otlp_rows_note_says_what_its_sink_received_and_whether_spans_arrived() {
        let mut otlp = cell("ours-otlp", 28_000.0, 22.0, 950.0);
        otlp.runs[0].requests = 1_000;
        let received = Received {
            traces: Tally {
                exports: 3,
                bytes: 2 * 1_048_576,
            },
            metrics: Tally {
                exports: 1,
                bytes: 2_048,
            },
            spans: 1_250,
            ..Received::default()
        };
        let mut results = Results {
            calls: Calls::new(vec![otlp]),
            exported: vec![(find("ours-otlp").unwrap(), received)],
            ..Results::default()
        };
        let note = exported_notes(&results);
        assert!(
            note.contains(
                "1250 spans in 3 trace exports (2.0 MiB) and 1 metrics exports (2.0 KiB) over \
                 the runs, against 1000 requests"
            ),
            "{note}"
        );
        assert!(note.contains(": 1.25 spans a request"), "{note}");
        assert!(note.contains("every run kept had spans arrive"), "{note}");
        assert!(!note.contains("refused"), "{note}");
        results.exported[0].1.refused = 2;
        let note = exported_notes(&results);
        assert!(
            note.contains("and refused 2 requests that were no export"),
            "{note}"
        );
        results.exported[0].1 = Received::default();
        let note = exported_notes(&results);
        assert!(note.contains("**no span arrived"), "{note}");
    }
}
