//! The gateway comparison's section of `BENCHMARKS.md`, and how it goes into the file without
//! touching the other sections.

use std::fmt::Write as _;

use super::kinds::{Gateway, Product};
use super::plan::{Measure, Plan, Results};
use crate::report::CallsReport;
use crate::stats::median;
use crate::suite::figures::{ratio, verdict};
use crate::suite::kinds::Family;

/// The section's heading: what [`splice`] looks for.
pub(crate) const HEADING: &str = "## Gateways: ours against supergateway and mcp-proxy";

/// `text` with its gateway section replaced by `section` (which starts with [`HEADING`]), or
/// with `section` appended when it has none. The section ends where the next `## ` heading
/// starts; its subsections written by hand stay (`by_hand`), as a full run keeps the others.
pub(crate) fn splice(text: &str, section: &str) -> String {
    crate::suite::by_hand::carry_over(text, &replace(text, section))
}

/// [`splice`] without keeping what was written by hand.
fn replace(text: &str, section: &str) -> String {
    let section = section.trim_end();
    let Some(start) = text.find(HEADING) else {
        return format!("{}\n\n{section}\n", text.trim_end());
    };
    let after = start + HEADING.len();
    let end = text[after..]
        .find("\n## ")
        .map_or(text.len(), |at| after + at + 1);
    let rest = &text[end..];
    let gap = if rest.is_empty() { "\n" } else { "\n\n" };
    format!("{}{section}{gap}{rest}", &text[..start])
}

/// The gateway section of `old`, appended to `new` when `new` has none: a full run of the
/// suite that left the gateways out keeps the figures of the last run that measured them.
pub(crate) fn carry_over(old: &str, new: &str) -> String {
    if new.contains(HEADING) {
        return new.to_owned();
    }
    let Some(start) = old.find(HEADING) else {
        return new.to_owned();
    };
    let after = start + HEADING.len();
    let end = old[after..]
        .find("\n## ")
        .map_or(old.len(), |at| after + at);
    splice(new, &old[start..end])
}

/// The medians of one gateway's runs of one measurement.
#[derive(Debug, Clone, Copy)]
struct Cell {
    rate: f64,
    p99_ms: f64,
    cpu_us: f64,
    errors: u64,
    answered: u64,
}

fn cell(results: &Results, key: &str, measure: Measure) -> Option<Cell> {
    let (_, _, runs) = results
        .loops
        .iter()
        .find(|(k, m, _)| *k == key && *m == measure)?;
    let of = |f: fn(&CallsReport) -> f64| median(runs.iter().map(f).collect());
    Some(Cell {
        rate: of(|r| r.rps),
        p99_ms: of(|r| r.p99_us / 1e3),
        cpu_us: of(|r| r.server_cpu_us_per_req.unwrap_or(f64::NAN)),
        errors: runs.iter().map(|r| r.errors).sum(),
        answered: runs.iter().map(|r| r.requests).sum(),
    })
}

/// The gateway of `product` measured with `family`.
fn of_product<'a>(
    gateways: &[&'a Gateway],
    product: Product,
    family: Family,
) -> Option<&'a Gateway> {
    gateways
        .iter()
        .copied()
        .find(|g| g.product == product && g.families.contains(&family))
}

/// A figure, "cannot serve" when nothing was answered, or "not run".
fn figure(cell: Option<Cell>, value: fn(&Cell) -> f64, digits: usize) -> String {
    match cell {
        None => "not run".to_owned(),
        Some(c) if c.answered == 0 => "cannot serve".to_owned(),
        Some(c) if c.errors > 0 => format!("{:.digits$} ({} errors)", value(&c), c.errors),
        Some(c) => format!("{:.digits$}", value(&c)),
    }
}

/// One row of the summary: a figure per product and ours ÷ supergateway.
struct Row {
    name: &'static str,
    measure: Measure,
    value: fn(&Cell) -> f64,
    digits: usize,
}

const ROWS: &[Row] = &[
    Row {
        name: "sessions, C = 16: req/s",
        measure: Measure::Calls(Family::Sessions),
        value: |c| c.rate,
        digits: 0,
    },
    Row {
        name: "sessions, C = 16: p99 ms",
        measure: Measure::Calls(Family::Sessions),
        value: |c| c.p99_ms,
        digits: 2,
    },
    Row {
        name: "sessions, C = 16: gateway CPU µs/req",
        measure: Measure::Calls(Family::Sessions),
        value: |c| c.cpu_us,
        digits: 1,
    },
    Row {
        name: "per request (2026-07-28), C = 16: req/s",
        measure: Measure::Calls(Family::PerRequest),
        value: |c| c.rate,
        digits: 0,
    },
    Row {
        name: "per request, C = 16: p99 ms",
        measure: Measure::Calls(Family::PerRequest),
        value: |c| c.p99_ms,
        digits: 2,
    },
    Row {
        name: "per request, C = 16: gateway CPU µs/req",
        measure: Measure::Calls(Family::PerRequest),
        value: |c| c.cpu_us,
        digits: 1,
    },
    Row {
        name: "new sessions/s (C = 16)",
        measure: Measure::Starts(Family::Sessions),
        value: |c| c.rate,
        digits: 1,
    },
    Row {
        name: "new sessions: gateway CPU µs each",
        measure: Measure::Starts(Family::Sessions),
        value: |c| c.cpu_us,
        digits: 0,
    },
    Row {
        name: "new per-request clients/s (C = 16)",
        measure: Measure::Starts(Family::PerRequest),
        value: |c| c.rate,
        digits: 1,
    },
    Row {
        name: "new per-request clients: gateway CPU µs each",
        measure: Measure::Starts(Family::PerRequest),
        value: |c| c.cpu_us,
        digits: 0,
    },
];

/// The whole section.
pub(crate) fn section(
    plan: &Plan,
    gateways: &[&Gateway],
    results: &Results,
    pinned: bool,
    context: &str,
) -> String {
    let mut out = format!(
        "{HEADING}\n\n{context} Load average (1 min) at the measurements' starts: {:.2} to {:.2}.\n\n",
        results.load.0, results.load.1
    );
    out += &method(plan, pinned);
    out += &summary(gateways, results);
    out += &targets(gateways, results);
    out += "\nThe gateways:\n\n";
    for gateway in gateways {
        let _ = writeln!(
            out,
            "- `{}` ({}): {}.",
            gateway.key,
            gateway.product.label(),
            gateway.description
        );
    }
    out += &details(gateways, results);
    out
}

fn method(plan: &Plan, pinned: bool) -> String {
    let cores = if pinned {
        "gateway and children pinned to CPU 0, `mcp-load` to CPU 1"
    } else {
        "gateway, children and `mcp-load` free to use either core (`--no-pin`)"
    };
    format!(
        "`mcp-load-suite --gateways` (`benches/load/suite/gateways/`): every gateway in front of \
         the same stdio child, `benches/peers/gateways/echo_child.py` (standard-library Python, \
         one thread), {cores}. Each of {runs} \
         runs starts every gateway afresh and goes through them in turn (interleaved); medians \
         of the runs. Calls: {c} sessions (2025-06-18) or {c} per-request connections \
         (2026-07-28, `mcp-load --protocol 2026-07-28`), `tools/call echo` in a closed loop, \
         {warmup} s warm-up, {duration} s measured. New clients: {c} at a time, each a new \
         connection, `initialize` and `notifications/initialized` (nothing per request), one \
         `echo` answered, DELETE. Gateway CPU is `utime + stime` of the gateway's own process \
         (`/proc/PID/stat`, 10 ms ticks), its children not counted; idle memory is the \
         gateway's `VmRSS` before and after {idle} sessions (connections closed), divided; a \
         child's death is `kill -9` of the session's child ({trials} trial(s) a run) while a \
         `sleep` call waits on it, timed to the client's error (bound 10 s).\n\n",
        runs = plan.runs,
        c = plan.concurrency,
        warmup = plan.warmup,
        duration = plan.duration,
        idle = plan.idle_sessions,
        trials = plan.death_trials,
    )
}

fn summary(gateways: &[&Gateway], results: &Results) -> String {
    let mut out = String::from("| | ");
    let names: Vec<&str> = Product::ALL.iter().map(|p| p.label()).collect();
    out += &names.join(" | ");
    out += " | ours ÷ supergateway |\n|---|";
    out += &"--:|".repeat(Product::ALL.len() + 1);
    out.push('\n');
    for row in ROWS {
        let cells: Vec<Option<Cell>> = Product::ALL
            .iter()
            .map(|&p| {
                of_product(gateways, p, row.measure.family())
                    .and_then(|g| cell(results, g.key, row.measure))
            })
            .collect();
        let figures: Vec<String> = cells
            .iter()
            .map(|c| figure(*c, row.value, row.digits))
            .collect();
        let versus = match (cells[0], cells[1]) {
            (Some(a), Some(b)) if a.answered > 0 && b.answered > 0 => {
                ratio((row.value)(&a), (row.value)(&b))
            }
            _ => "n/a".to_owned(),
        };
        let _ = writeln!(out, "| {} | {} | {versus} |", row.name, figures.join(" | "));
    }
    out += &memory_rows(gateways, results);
    out
}

fn memory_rows(gateways: &[&Gateway], results: &Results) -> String {
    let of = |product, pick: &dyn Fn(&Gateway) -> Option<f64>| {
        of_product(gateways, product, Family::Sessions).and_then(pick)
    };
    let idle = |g: &Gateway| {
        let (_, runs) = results.idle.iter().find(|(k, _)| *k == g.key)?;
        Some(median(runs.iter().map(|r| r.kib_per_session).collect()))
    };
    let death = |g: &Gateway| death_ms(results, g.key);
    let mut out = String::new();
    for (name, pick, digits) in [
        (
            "gateway memory per idle session, KiB",
            &idle as &dyn Fn(&Gateway) -> Option<f64>,
            2,
        ),
        ("a child's death: ms to the client's error", &death, 1),
    ] {
        let values: Vec<Option<f64>> = Product::ALL.iter().map(|&p| of(p, pick)).collect();
        let shown: Vec<String> = values
            .iter()
            .map(|v| match v {
                Some(v) if v.is_finite() => format!("{v:.digits$}"),
                Some(_) => "never told".to_owned(),
                None => "not run".to_owned(),
            })
            .collect();
        let versus = match (values[0], values[1]) {
            (Some(a), Some(b)) => ratio(a, b),
            _ => "n/a".to_owned(),
        };
        let _ = writeln!(out, "| {name} | {} | {versus} |", shown.join(" | "));
    }
    out
}

/// The median over every trial of every run; NaN when no trial saw an error in time.
fn death_ms(results: &Results, key: &str) -> Option<f64> {
    let (_, runs) = results.death.iter().find(|(k, _)| *k == key)?;
    Some(median(
        runs.iter()
            .flat_map(|r| r.seen_ms.iter().copied())
            .collect(),
    ))
}

fn targets(gateways: &[&Gateway], results: &Results) -> String {
    let get = |product, measure: Measure| {
        of_product(gateways, product, measure.family()).and_then(|g| cell(results, g.key, measure))
    };
    let sessions = Measure::Calls(Family::Sessions);
    let (Some(ours), Some(theirs)) = (
        get(Product::Ours, sessions),
        get(Product::Supergateway, sessions),
    ) else {
        return "\nTargets: not measured (ours and supergateway with sessions are needed).\n"
            .to_owned();
    };
    let mut out = String::from("\nIssue 33's targets, ratios of this run's medians:\n\n");
    let rps = ours.rate / theirs.rate;
    let cpu = ours.cpu_us / theirs.cpu_us;
    let _ = writeln!(
        out,
        "- Requests per second at 16 sessions at least 10x supergateway's: {rps:.1}x, {}.",
        verdict(rps >= 10.0)
    );
    let _ = writeln!(
        out,
        "- Gateway CPU per request at most a tenth of supergateway's: {cpu:.3}x, {}.",
        verdict(cpu <= 0.1)
    );
    let starts = (
        get(Product::Ours, Measure::Starts(Family::PerRequest)),
        get(Product::Supergateway, Measure::Starts(Family::Sessions)),
    );
    if let (Some(a), Some(b)) = starts {
        let r = a.rate / b.rate;
        let _ = writeln!(
            out,
            "- New clients per second per request (warm pool) at least 10x supergateway's new sessions per second: {r:.1}x, {}.",
            verdict(r >= 10.0)
        );
    }
    let idle = of_product(gateways, Product::Ours, Family::Sessions)
        .and_then(|g| results.idle.iter().find(|(k, _)| *k == g.key))
        .map(|(_, runs)| median(runs.iter().map(|r| r.kib_per_session).collect()));
    if let Some(kib) = idle {
        let _ = writeln!(
            out,
            "- Gateway memory per idle session at most 64 KiB: {kib:.2} KiB, {}.",
            verdict(kib <= 64.0)
        );
    }
    out
}

fn details(gateways: &[&Gateway], results: &Results) -> String {
    let mut out = String::from(
        "\nEvery configuration, medians (errors: the sum over the runs):\n\n| gateway | measurement | per second | p50 ms | p99 ms | gateway CPU µs each | errors |\n|---|---|--:|--:|--:|--:|--:|\n",
    );
    for (key, measure, runs) in &results.loops {
        let of = |f: fn(&CallsReport) -> f64| median(runs.iter().map(f).collect());
        let errors = runs.iter().map(|r| r.errors).sum::<u64>();
        // A gateway that answered nothing has no rate, latency or cost per answer to show.
        if runs.iter().all(|r| r.rps == 0.0) {
            let _ = writeln!(
                out,
                "| `{key}` | {measure:?} | cannot serve | | | | {errors} |"
            );
            continue;
        }
        let _ = writeln!(
            out,
            "| `{key}` | {measure:?} | {:.1} | {:.2} | {:.2} | {:.1} | {errors} |",
            of(|r| r.rps),
            of(|r| r.p50_us / 1e3),
            of(|r| r.p99_us / 1e3),
            of(|r| r.server_cpu_us_per_req.unwrap_or(f64::NAN)),
        );
    }
    out += "\nWhat clients saw:\n\n";
    for gateway in gateways {
        if let Some((_, runs)) = results.death.iter().find(|(k, _)| *k == gateway.key) {
            let seen: Vec<String> = runs
                .iter()
                .flat_map(|r| r.seen_ms.iter().map(|ms| format!("{ms:.1}")))
                .collect();
            let never: usize = runs.iter().map(|r| r.not_seen).sum();
            let sample = runs
                .iter()
                .flat_map(|r| r.samples.first())
                .next()
                .map_or("", String::as_str);
            let _ = writeln!(
                out,
                "- `{}`, child killed: error after {} ms, never told (10 s) {never}; {sample}",
                gateway.key,
                seen.join(", ")
            );
        }
        for (key, _, runs) in results.loops.iter().filter(|(k, _, _)| *k == gateway.key) {
            if let Some(sample) = runs.iter().flat_map(|r| r.error_samples.first()).next() {
                let _ = writeln!(
                    out,
                    "- `{key}`, first error: {}",
                    sample.chars().take(200).collect::<String>()
                );
            }
        }
    }
    for failure in &results.failures {
        let _ = writeln!(
            out,
            "- failed: {}",
            failure.chars().take(300).collect::<String>()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_that_answered_nothing_cannot_serve_in_every_row() {
        let refused = CallsReport {
            errors: 12,
            ..CallsReport::default()
        };
        let served = CallsReport {
            rps: 100.0,
            ..CallsReport::default()
        };
        let results = Results {
            loops: vec![
                (
                    "refusing",
                    Measure::Calls(Family::PerRequest),
                    vec![refused],
                ),
                ("serving", Measure::Calls(Family::PerRequest), vec![served]),
            ],
            ..Results::default()
        };
        let table = details(&[], &results);
        assert!(
            table.contains("| `refusing` | Calls(PerRequest) | cannot serve | | | | 12 |"),
            "{table}"
        );
        assert!(
            table.contains("| `serving` | Calls(PerRequest) | 100.0 |"),
            "{table}"
        );
    }

    #[test]
    fn a_section_replaces_its_old_self_and_leaves_the_rest() {
        let old = format!("# T\n\n## A\n\na\n\n{HEADING}\n\nold\n\n## B\n\nb\n");
        let new = splice(&old, &format!("{HEADING}\n\nnew\n"));
        assert_eq!(
            new,
            format!("# T\n\n## A\n\na\n\n{HEADING}\n\nnew\n\n## B\n\nb\n")
        );
        let at_end = splice("# T\n\n## A\n\na\n", &format!("{HEADING}\n\nnew\n"));
        assert_eq!(at_end, format!("# T\n\n## A\n\na\n\n{HEADING}\n\nnew\n"));
        let last = splice(&at_end, &format!("{HEADING}\n\nnewer\n"));
        assert_eq!(last, format!("# T\n\n## A\n\na\n\n{HEADING}\n\nnewer\n"));
    }

    #[test]
    fn a_section_keeps_its_subsections_written_by_hand() {
        let kept = "### Unpinned (written by hand)\n\nby hand\n";
        let old = format!("# T\n\n{HEADING}\n\nold\n\n### Details\n\nd\n\n{kept}\n## B\n\nb\n");
        let new = splice(&old, &format!("{HEADING}\n\nnew\n\n### Details\n\nd2\n"));
        assert_eq!(
            new,
            format!("# T\n\n{HEADING}\n\nnew\n\n### Details\n\nd2\n\n{kept}\n## B\n\nb\n")
        );
    }

    #[test]
    fn a_run_without_gateways_keeps_the_last_section() {
        let old = format!("# T\n\n{HEADING}\n\nkept\n\n## B\n\nb\n");
        let carried = carry_over(&old, "# U\n");
        assert_eq!(carried, format!("# U\n\n{HEADING}\n\nkept\n"));
        let fresh = format!("# U\n\n{HEADING}\n\nfresh\n");
        assert_eq!(carry_over(&old, &fresh), fresh);
    }
}
