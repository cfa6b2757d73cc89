//! `--mode calls`: `C` sessions, each calling `echo` in a closed loop; throughput, latency,
//! errors and the server's CPU per request over a measured window after a warm-up.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Barrier;

use super::reply::Kind;
use super::session::{Session, Target};
use crate::errors::Errors;
use crate::procfs::{CpuWindow, Proc, clock_ticks_per_second};
use crate::report::CallsReport;
use crate::stats::percentile;

/// Replies before the window are not counted.
const WARMUP: u8 = 0;
/// Replies in the window are counted.
const MEASURE: u8 = 1;
/// Sessions stop once their call in flight returns.
const STOP: u8 = 2;

/// What the closed loop needs to know.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) target: Target,
    pub(crate) concurrency: usize,
    pub(crate) warmup: Duration,
    pub(crate) duration: Duration,
    /// The server's processes, their CPU summed (none: not measured).
    pub(crate) server_pids: Vec<u32>,
    /// Processes whose CPU is reported apart, by name.
    pub(crate) side_pids: Vec<(String, u32)>,
}

/// What one session measured.
#[derive(Debug, Default)]
struct Tally {
    /// Latencies of the replies in the window, in nanoseconds.
    latencies: Vec<u64>,
    json: u64,
    sse: u64,
    errors: Errors,
    ran: bool,
}

/// Runs the closed loop and reports.
pub(crate) async fn run(plan: Plan) -> anyhow::Result<CallsReport> {
    let phase = Arc::new(AtomicU8::new(WARMUP));
    // Every session is initialized before the warm-up starts.
    let ready = Arc::new(Barrier::new(plan.concurrency + 1));
    let mut tasks = Vec::with_capacity(plan.concurrency);
    for n in 0..plan.concurrency {
        let (target, phase, ready) = (plan.target.clone(), phase.clone(), ready.clone());
        tasks.push(tokio::spawn(session(n, target, phase, ready)));
    }
    ready.wait().await;
    tokio::time::sleep(plan.warmup).await;

    let ticks = clock_ticks_per_second();
    let server_cpu = windows(&plan.server_pids)?;
    let side_cpu = windows(plan.side_pids.iter().map(|(_, pid)| pid))?;
    let client_cpu = CpuWindow::start(Proc::Myself)?;
    let start = Instant::now();
    phase.store(MEASURE, Ordering::Relaxed);
    tokio::time::sleep(plan.duration).await;
    phase.store(STOP, Ordering::Relaxed);
    let seconds = start.elapsed().as_secs_f64();
    let server_cpu_us = if server_cpu.is_empty() {
        None
    } else {
        Some(spent(&server_cpu, ticks)?)
    };
    let side_cpu_us: Vec<f64> = side_cpu
        .iter()
        .map(|window| window.end(ticks))
        .collect::<anyhow::Result<_>>()?;
    let client_cpu_us = client_cpu.end(ticks)?;

    let mut all = Tally::default();
    let mut sessions_ok = 0;
    for task in tasks {
        let tally = task.await?;
        sessions_ok += usize::from(tally.ran);
        all.latencies.extend(tally.latencies);
        all.json += tally.json;
        all.sse += tally.sse;
        all.errors.merge(tally.errors);
    }
    all.latencies.sort_unstable();
    let requests = all.latencies.len() as u64;
    let per_request = |us: f64| us / requests.max(1) as f64;
    let (errors, error_samples) = all.errors.into_parts();
    Ok(CallsReport {
        concurrency: plan.concurrency,
        sessions_ok,
        seconds,
        requests,
        rps: requests as f64 / seconds,
        p50_us: percentile(&all.latencies, 0.50),
        p99_us: percentile(&all.latencies, 0.99),
        max_us: all.latencies.last().map_or(0.0, |&ns| ns as f64 / 1e3),
        errors,
        error_samples,
        json_replies: all.json,
        sse_replies: all.sse,
        server_cpu_us_per_req: server_cpu_us.map(per_request),
        server_cpu_share: server_cpu_us.map(|us| us / 1e6 / seconds),
        client_cpu_us_per_req: per_request(client_cpu_us),
        client_cpu_share: client_cpu_us / 1e6 / seconds,
        side_cpu_us_per_req: plan
            .side_pids
            .iter()
            .zip(side_cpu_us)
            .map(|((name, _), us)| (name.clone(), per_request(us)))
            .collect(),
    })
}

/// A CPU window started now on each of `pids`.
fn windows<'a>(pids: impl IntoIterator<Item = &'a u32>) -> anyhow::Result<Vec<CpuWindow>> {
    pids.into_iter()
        .map(|&pid| CpuWindow::start(Proc::Pid(pid)))
        .collect()
}

/// The CPU time the `windows` spent together, in microseconds.
fn spent(windows: &[CpuWindow], ticks: u64) -> anyhow::Result<f64> {
    windows.iter().map(|window| window.end(ticks)).sum()
}

/// One session: initialize (unless per-request), wait for the others, call until told to stop,
/// end the session.
async fn session(n: usize, target: Target, phase: Arc<AtomicU8>, ready: Arc<Barrier>) -> Tally {
    let mut tally = Tally::default();
    let started = async {
        let mut session = Session::connect(&target).await?;
        session.start().await?;
        anyhow::Ok(session)
    }
    .await;
    ready.wait().await;
    let mut session = match started {
        Ok(session) => session,
        Err(err) => {
            tally
                .errors
                .add(format!("session {n} did not start: {err:#}"));
            return tally;
        }
    };
    let mut text = String::new();
    for call in 0u64.. {
        if phase.load(Ordering::Relaxed) == STOP {
            break;
        }
        text.clear();
        // Unique per request: the session and the call.
        let _ = write!(text, "s{n}-c{call}");
        let sent = Instant::now();
        match session.echo(&text).await {
            Ok(reply) if phase.load(Ordering::Relaxed) == MEASURE => {
                let ns = reply.at.saturating_duration_since(sent).as_nanos();
                tally.latencies.push(u64::try_from(ns).unwrap_or(u64::MAX));
                match reply.kind {
                    Kind::Json => tally.json += 1,
                    Kind::Sse => tally.sse += 1,
                }
            }
            Ok(_) => {}
            Err(err) => {
                tally
                    .errors
                    .add(format!("session {n}, call {call}: {err:#}"));
                if session.is_closed() {
                    tally
                        .errors
                        .add(format!("session {n}: connection lost, session ended"));
                    return tally;
                }
            }
        }
    }
    tally.ran = true;
    session.delete().await;
    tally
}
