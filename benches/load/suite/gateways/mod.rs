//! The gateway comparison (`mcp-load-suite --gateways`, issue 33): ours against supergateway
//! and mcp-proxy (npm and PyPI), every one in front of the same stdio child
//! (`benches/peers/gateways/echo_child.py`, one Python process per session where the gateway
//! has sessions).
//!
//! Each run (`--runs`) starts every gateway afresh and goes through them in turn for each
//! measurement (interleaved, so that a slow minute of a shared machine does not land on one
//! gateway only): `mcp-load --mode calls` with `--concurrency` sessions and the same per
//! request (2026-07-28), then `--mode starts` both ways; then, each gateway started afresh for
//! it, `--idle-sessions` idle sessions (connections closed) and `--death-trials` children
//! killed. CPU and memory are the gateway's process alone (`/proc/PID`), its children not
//! counted. The section it writes replaces the one of the same title in `--output`, leaving
//! the rest of the file as it was.

mod kinds;
mod plan;
mod render;

use anyhow::Context as _;

use self::kinds::{GATEWAYS, Gateway, Paths};
use super::kinds::Family;
use super::quiet::Quiet;
use super::servers::Launcher;
use crate::report::{CallsReport, DeathReport, IdleReport};

pub(crate) use self::plan::{Measure, Plan, Results};
pub(crate) use self::render::{carry_over, splice};

/// What a comparison measured, and of which gateways.
#[derive(Debug)]
pub(crate) struct Measured {
    gateways: Vec<&'static Gateway>,
    results: Results,
    /// Whether each gateway ran on CPU 0 and the load generator on CPU 1.
    pinned: bool,
}

impl Measured {
    /// Its section of `BENCHMARKS.md`; `context` says when and where.
    pub(crate) fn section(&self, plan: &Plan, context: &str) -> String {
        render::section(plan, &self.gateways, &self.results, self.pinned, context)
    }
}

/// Runs the comparison.
pub(crate) fn run(plan: &Plan, launcher: &Launcher, quiet: &mut Quiet) -> anyhow::Result<Measured> {
    let paths = Paths::new(&plan.root, &launcher.bin_dir)?;
    let gateways = pick(plan.keys.as_deref())?;
    let mut results = Results {
        load: (f64::INFINITY, 0.0),
        ..Results::default()
    };
    for run in 1..=plan.runs {
        loops(plan, launcher, &paths, &gateways, quiet, &mut results, run);
        for gateway in gateways
            .iter()
            .filter(|g| g.families.contains(&Family::Sessions))
        {
            quiet.wait();
            note_load(&mut results);
            match idle(plan, launcher, &paths, gateway) {
                Ok(report) => push(&mut results.idle, gateway.key, report),
                Err(err) => fail(&mut results, run, gateway.key, "idle", &err),
            }
        }
        for gateway in gateways
            .iter()
            .filter(|g| g.families.contains(&Family::Sessions))
        {
            quiet.wait();
            note_load(&mut results);
            match death(plan, launcher, &paths, gateway) {
                Ok(report) => push(&mut results.death, gateway.key, report),
                Err(err) => fail(&mut results, run, gateway.key, "death", &err),
            }
        }
    }
    Ok(Measured {
        gateways,
        results,
        pinned: launcher.pin,
    })
}

/// The gateways `keys` names, or all.
fn pick(keys: Option<&[String]>) -> anyhow::Result<Vec<&'static Gateway>> {
    let Some(keys) = keys else {
        return Ok(GATEWAYS.iter().collect());
    };
    let wanted = keys.iter().map(|k| k.trim()).filter(|k| !k.is_empty());
    wanted
        .map(|key| {
            GATEWAYS.iter().find(|g| g.key == key).with_context(|| {
                let known: Vec<&str> = GATEWAYS.iter().map(|g| g.key).collect();
                format!("unknown gateway {key:?}: one of {}", known.join(", "))
            })
        })
        .collect()
}

/// One run of the closed loops: every gateway started, then each measurement through them in
/// turn, then every gateway stopped.
fn loops(
    plan: &Plan,
    launcher: &Launcher,
    paths: &Paths,
    gateways: &[&'static Gateway],
    quiet: &mut Quiet,
    results: &mut Results,
    run: usize,
) {
    let mut running = Vec::new();
    for gateway in gateways {
        match gateway.start(launcher, paths) {
            Ok(server) => running.push((*gateway, server)),
            Err(err) => fail(results, run, gateway.key, "start", &err),
        }
    }
    for measure in Measure::ALL {
        for (gateway, server) in &running {
            if !gateway.families.contains(&measure.family()) {
                continue;
            }
            quiet.wait();
            note_load(results);
            let mut args = vec![
                "--url".to_owned(),
                server.url.clone(),
                "--mode".to_owned(),
                measure.mode().to_owned(),
                "--concurrency".to_owned(),
                plan.concurrency.to_string(),
                "--duration".to_owned(),
                plan.duration.to_string(),
                "--warmup".to_owned(),
                plan.warmup.to_string(),
            ];
            args.extend(server.pid_args());
            args.extend(measure.family().load_args().iter().map(|a| (*a).to_owned()));
            match launcher.load::<CallsReport>(&args) {
                Ok(report) => {
                    eprintln!(
                        "gateways, run {run}, {:<26} {:<28} {:>8.1}/s  p99 {:>8.0} µs  CPU {:>7.1} µs  errors {}",
                        gateway.key,
                        format!("{measure:?}"),
                        report.rps,
                        report.p99_us,
                        report.server_cpu_us_per_req.unwrap_or(f64::NAN),
                        report.errors
                    );
                    let at = results
                        .loops
                        .iter_mut()
                        .find(|(key, m, _)| *key == gateway.key && *m == measure);
                    match at {
                        Some((_, _, runs)) => runs.push(report),
                        None => results.loops.push((gateway.key, measure, vec![report])),
                    }
                }
                Err(err) => fail(results, run, gateway.key, &format!("{measure:?}"), &err),
            }
        }
    }
}

fn idle(
    plan: &Plan,
    launcher: &Launcher,
    paths: &Paths,
    gateway: &Gateway,
) -> anyhow::Result<IdleReport> {
    let server = gateway.start(launcher, paths)?;
    let report: IdleReport = launcher.load(&server.idle_args(plan.idle_sessions, true))?;
    eprintln!(
        "gateways, idle, {:<26} {:.2} KiB/session ({} sessions, {} errors)",
        gateway.key, report.kib_per_session, report.sessions_ok, report.errors
    );
    Ok(report)
}

fn death(
    plan: &Plan,
    launcher: &Launcher,
    paths: &Paths,
    gateway: &Gateway,
) -> anyhow::Result<DeathReport> {
    let server = gateway.start(launcher, paths)?;
    let args = [
        "--url".to_owned(),
        server.url.clone(),
        "--mode".to_owned(),
        "death".to_owned(),
        "--trials".to_owned(),
        plan.death_trials.to_string(),
    ];
    let report: DeathReport = launcher.load(&args)?;
    eprintln!("gateways, death, {:<26} {report}", gateway.key);
    Ok(report)
}

fn push<R>(all: &mut Vec<(&'static str, Vec<R>)>, key: &'static str, report: R) {
    match all.iter_mut().find(|(k, _)| *k == key) {
        Some((_, reports)) => reports.push(report),
        None => all.push((key, vec![report])),
    }
}

fn fail(results: &mut Results, run: usize, key: &str, what: &str, err: &anyhow::Error) {
    let line = format!("run {run}, {key}, {what}: {err:#}");
    eprintln!("gateways: {line}");
    results.failures.push(line);
}

/// Keeps the lowest and highest 1-minute load average seen at a measurement's start.
fn note_load(results: &mut Results) {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<f64>().ok());
    if let Some(load) = load {
        results.load = (results.load.0.min(load), results.load.1.max(load));
    }
}
