//! The closed loop, whatever the client: `C` caller tasks, a warm-up, a measured window, and
//! what was measured in it (throughput, latency, errors, CPU time, connections).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use crate::errors::Errors;
use crate::procfs::{self, CpuWindow, Proc, clock_ticks_per_second};
use crate::report::ClientReport;
use crate::stats::percentile;

/// Replies before the window are not counted.
const WARMUP: u8 = 0;
/// Replies in the window are counted.
const MEASURE: u8 = 1;
/// Callers stop once their call in flight returns.
const STOP: u8 = 2;

/// The longest one call may take before it counts as an error: far beyond any healthy reply on
/// a loopback, and it bounds how long a caller can outlive the window.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long starting the session (`initialize`, `notifications/initialized`) may take.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long ending the session (DELETE, closing the client) may take.
pub(crate) const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the closed loop needs to know.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Concurrent callers.
    pub(crate) callers: usize,
    /// Seconds of warm-up before the window.
    pub(crate) warmup: Duration,
    /// Length of the window.
    pub(crate) duration: Duration,
    /// The server, for its CPU time.
    pub(crate) server_pid: Option<u32>,
}

/// A client with a session started: what each caller calls, from its own task.
pub(crate) trait Echo: Clone + Send + Sync + 'static {
    /// Calls `tools/call echo {text}` and checks that the result is `text`.
    fn echo(&self, text: String) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Whether the session can no longer carry calls, so a caller should stop.
    fn is_closed(&self) -> bool;
}

/// What one run measured, before it is labelled as a report.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// The window as measured.
    seconds: f64,
    /// Latencies of the replies in the window, sorted, in nanoseconds.
    latencies: Vec<u64>,
    /// Errors of the callers and of the session.
    pub(crate) errors: Errors,
    /// The client's CPU time in the window, in microseconds.
    client_cpu_us: f64,
    /// The server's, given its PID.
    server_cpu_us: Option<f64>,
    /// TCP connects on the machine in the window.
    tcp_connects: Option<u64>,
    /// The client's sockets in the middle of the window.
    sockets_open: Option<u64>,
}

impl Measured {
    /// The report of this run of `client` with `callers` callers.
    pub(crate) fn into_report(self, client: &str, callers: usize) -> ClientReport {
        let requests = self.latencies.len() as u64;
        let seconds = self.seconds.max(f64::MIN_POSITIVE);
        let per_request = |us: f64| us / requests.max(1) as f64;
        let (errors, error_samples) = self.errors.into_parts();
        ClientReport {
            client: client.to_owned(),
            callers,
            seconds: self.seconds,
            requests,
            rps: requests as f64 / seconds,
            p50_us: percentile(&self.latencies, 0.50),
            p99_us: percentile(&self.latencies, 0.99),
            max_us: self.latencies.last().map_or(0.0, |&ns| ns as f64 / 1e3),
            errors,
            error_samples,
            client_cpu_us_per_req: per_request(self.client_cpu_us),
            client_cpu_share: self.client_cpu_us / 1e6 / seconds,
            server_cpu_us_per_req: self.server_cpu_us.map(per_request),
            server_cpu_share: self.server_cpu_us.map(|us| us / 1e6 / seconds),
            tcp_connects: self.tcp_connects,
            sockets_open: self.sockets_open,
        }
    }
}

/// What one caller saw.
#[derive(Debug, Default)]
struct Tally {
    /// Latencies of the replies in the window, in nanoseconds.
    latencies: Vec<u64>,
    /// Wrong, missing and failed replies.
    errors: Errors,
}

/// Runs `plan.callers` callers of `client` through the warm-up and the window, then waits for
/// each to finish its call in flight (at most [`CALL_TIMEOUT`]).
pub(crate) async fn run<E: Echo>(client: E, plan: &Plan) -> anyhow::Result<Measured> {
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let mut tasks = Vec::with_capacity(plan.callers);
    for n in 0..plan.callers {
        tasks.push(tokio::spawn(caller(n, client.clone(), phase.clone())));
    }
    tokio::time::sleep(plan.warmup).await;

    let ticks = clock_ticks_per_second();
    let server_cpu = plan.server_pid.map(|pid| CpuWindow::start(Proc::Pid(pid)));
    let client_cpu = CpuWindow::start(Proc::Myself)?;
    let connects = procfs::active_opens();
    let start = Instant::now();
    phase.store(MEASURE, Ordering::Relaxed);
    tokio::time::sleep(plan.duration / 2).await;
    let sockets_open = procfs::open_sockets();
    tokio::time::sleep_until((start + plan.duration).into()).await;
    phase.store(STOP, Ordering::Relaxed);
    let seconds = start.elapsed().as_secs_f64();
    let server_cpu_us = match server_cpu {
        Some(window) => Some(window?.end(ticks)?),
        None => None,
    };
    let client_cpu_us = client_cpu.end(ticks)?;
    let tcp_connects = connects
        .zip(procfs::active_opens())
        .map(|(before, after)| after.saturating_sub(before));

    let mut measured = Measured {
        seconds,
        client_cpu_us,
        server_cpu_us,
        tcp_connects,
        sockets_open,
        ..Measured::default()
    };
    for task in tasks {
        let tally = task.await?;
        measured.latencies.extend(tally.latencies);
        measured.errors.merge(tally.errors);
    }
    measured.latencies.sort_unstable();
    Ok(measured)
}

/// One caller: a unique text per call, one call at a time, until told to stop.
async fn caller<E: Echo>(n: usize, client: E, phase: Arc<AtomicU8>) -> Tally {
    let mut tally = Tally::default();
    for call in 0u64.. {
        if phase.load(Ordering::Relaxed) == STOP {
            break;
        }
        // Unique per request: the caller and the call.
        let text = format!("c{n}-{call}");
        let sent = Instant::now();
        match tokio::time::timeout(CALL_TIMEOUT, client.echo(text)).await {
            Ok(Ok(())) if phase.load(Ordering::Relaxed) == MEASURE => {
                let ns = sent.elapsed().as_nanos();
                tally.latencies.push(u64::try_from(ns).unwrap_or(u64::MAX));
            }
            Ok(Ok(())) => {}
            Ok(Err(err)) => tally
                .errors
                .add(format!("caller {n}, call {call}: {err:#}")),
            Err(_) => tally.errors.add(format!(
                "caller {n}, call {call}: no reply within {CALL_TIMEOUT:?}"
            )),
        }
        if client.is_closed() {
            tally
                .errors
                .add(format!("caller {n}: the session is closed, caller stopped"));
            break;
        }
    }
    tally
}
