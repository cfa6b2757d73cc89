//! The closed loop's clock and accounts, whoever makes the calls (`mcp-load`'s sessions or
//! `mcp-client-load`'s callers): the phase every caller reads, what each caller tallies, and
//! the measured window around them, from which both programs make the one [`CallsReport`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use crate::errors::Errors;
use crate::procfs::{self, CpuWindow, Proc, clock_ticks_per_second};
use crate::report::CallsReport;
use crate::stats::percentile;

/// Replies before the window are not counted.
const WARMUP: u8 = 0;
/// Replies in the window are counted.
const MEASURE: u8 = 1;
/// Callers stop once their call in flight returns.
const STOP: u8 = 2;

/// Where the loop is, which every caller reads around each call: warming up, measuring, or
/// stopping.
#[derive(Debug, Clone, Default)]
pub(crate) struct Phase(Arc<AtomicU8>);

impl Phase {
    /// Whether a reply that comes now counts.
    pub(crate) fn is_measuring(&self) -> bool {
        self.0.load(Ordering::Relaxed) == MEASURE
    }

    /// Whether the callers should stop.
    pub(crate) fn is_stopping(&self) -> bool {
        self.0.load(Ordering::Relaxed) == STOP
    }

    fn enter(&self, phase: u8) {
        self.0.store(phase, Ordering::Relaxed);
    }
}

/// How a reply came, where the caller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An `application/json` body.
    Json,
    /// A `text/event-stream` body.
    Sse,
}

/// What callers saw: the replies in the window and the errors.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Latencies of the replies in the window, in nanoseconds.
    latencies: Vec<u64>,
    json: u64,
    sse: u64,
    /// Wrong, missing and failed replies, warm-up included, and failures of the sessions.
    pub(crate) errors: Errors,
}

impl Tally {
    /// Counts a reply in the window that took `latency` and came as `kind`, when the caller
    /// knows (a client library does not say).
    pub(crate) fn reply(&mut self, latency: Duration, kind: Option<Kind>) {
        self.latencies
            .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
        match kind {
            Some(Kind::Json) => self.json += 1,
            Some(Kind::Sse) => self.sse += 1,
            None => {}
        }
    }

    /// Counts another caller's tally too.
    pub(crate) fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.json += other.json;
        self.sse += other.sse;
        self.errors.merge(other.errors);
    }
}

/// When the window of a run is and what it watches, the same for every caller.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Seconds of warm-up before the window.
    pub(crate) warmup: Duration,
    /// Length of the window.
    pub(crate) duration: Duration,
    /// The processes whose CPU time it measures.
    pub(crate) watched: Watched,
}

/// The processes whose CPU time the window measures, besides the caller's own.
#[derive(Debug, Clone, Default)]
pub(crate) struct Watched {
    /// The server's processes, their CPU summed (none: not measured).
    pub(crate) server_pids: Vec<u32>,
    /// Processes whose CPU is reported apart, by name.
    pub(crate) side_pids: Vec<(String, u32)>,
}

/// What the window measured around the callers.
#[derive(Debug)]
pub(crate) struct Window {
    /// Its length, as measured.
    seconds: f64,
    /// The server's CPU time in it, in microseconds, given its processes.
    server_cpu_us: Option<f64>,
    /// Each side process's, by name.
    side_cpu_us: Vec<(String, f64)>,
    /// The calling process's own.
    client_cpu_us: f64,
    /// TCP connects on the machine in it.
    tcp_connects: Option<u64>,
    /// The calling process's sockets in its middle.
    sockets_open: Option<u64>,
}

/// The loop's clock, once the callers run: the plan's warm-up, then its window, whose replies
/// `phase` tells the callers to count, and the CPU time of the watched processes and of this
/// one over it; then tells the callers to stop.
pub(crate) async fn window(phase: &Phase, plan: &Plan) -> anyhow::Result<Window> {
    let (duration, watched) = (plan.duration, &plan.watched);
    phase.enter(WARMUP);
    tokio::time::sleep(plan.warmup).await;

    let ticks = clock_ticks_per_second();
    let server: Vec<CpuWindow> = watched
        .server_pids
        .iter()
        .map(|&pid| CpuWindow::start(Proc::Pid(pid)))
        .collect::<anyhow::Result<_>>()?;
    let side: Vec<CpuWindow> = watched
        .side_pids
        .iter()
        .map(|&(_, pid)| CpuWindow::start(Proc::Pid(pid)))
        .collect::<anyhow::Result<_>>()?;
    let client = CpuWindow::start(Proc::Myself)?;
    let connects = procfs::active_opens();
    let start = Instant::now();
    phase.enter(MEASURE);
    tokio::time::sleep(duration / 2).await;
    let sockets_open = procfs::open_sockets();
    tokio::time::sleep_until((start + duration).into()).await;
    phase.enter(STOP);
    let seconds = start.elapsed().as_secs_f64();

    let server_cpu_us = if server.is_empty() {
        None
    } else {
        Some(
            server
                .iter()
                .map(|w| w.end(ticks))
                .sum::<anyhow::Result<f64>>()?,
        )
    };
    let side_cpu_us = watched
        .side_pids
        .iter()
        .zip(&side)
        .map(|((name, _), w)| Ok((name.clone(), w.end(ticks)?)))
        .collect::<anyhow::Result<_>>()?;
    Ok(Window {
        seconds,
        server_cpu_us,
        side_cpu_us,
        client_cpu_us: client.end(ticks)?,
        tcp_connects: connects
            .zip(procfs::active_opens())
            .map(|(before, after)| after.saturating_sub(before)),
        sockets_open,
    })
}

impl Window {
    /// The report of this window and of what its callers tallied: `concurrency` callers, of
    /// which `sessions_ok` sessions ran to the end, on `client` (none: `mcp-load`'s own).
    pub(crate) fn report(
        self,
        mut tally: Tally,
        concurrency: usize,
        sessions_ok: usize,
        client: Option<&str>,
    ) -> CallsReport {
        tally.latencies.sort_unstable();
        let latencies = &tally.latencies;
        let requests = latencies.len() as u64;
        let seconds = self.seconds.max(f64::MIN_POSITIVE);
        let per_request = |us: f64| us / requests.max(1) as f64;
        let (errors, error_samples) = tally.errors.into_parts();
        CallsReport {
            client: client.map(str::to_owned),
            concurrency,
            sessions_ok,
            seconds: self.seconds,
            requests,
            rps: requests as f64 / seconds,
            p50_us: percentile(latencies, 0.50),
            p99_us: percentile(latencies, 0.99),
            max_us: latencies.last().map_or(0.0, |&ns| ns as f64 / 1e3),
            errors,
            error_samples,
            json_replies: tally.json,
            sse_replies: tally.sse,
            server_cpu_us_per_req: self.server_cpu_us.map(per_request),
            server_cpu_share: self.server_cpu_us.map(|us| us / 1e6 / seconds),
            client_cpu_us_per_req: per_request(self.client_cpu_us),
            client_cpu_share: self.client_cpu_us / 1e6 / seconds,
            side_cpu_us_per_req: self
                .side_cpu_us
                .into_iter()
                .map(|(name, us)| (name, per_request(us)))
                .collect(),
            tcp_connects: self.tcp_connects,
            sockets_open: self.sockets_open,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_counts_the_replies_and_their_kinds_and_the_cpu_per_request() {
        let mut a = Tally::default();
        a.reply(Duration::from_micros(300), Some(Kind::Json));
        a.reply(Duration::from_micros(100), Some(Kind::Sse));
        let mut b = Tally::default();
        b.reply(Duration::from_micros(200), None);
        b.errors.add("one".to_owned());
        a.merge(b);
        let window = Window {
            seconds: 2.0,
            server_cpu_us: Some(30.0),
            side_cpu_us: vec![("redis".to_owned(), 6.0)],
            client_cpu_us: 3.0,
            tcp_connects: Some(1),
            sockets_open: None,
        };
        let report = window.report(a, 16, 15, Some("ours"));
        assert_eq!((report.requests, report.rps, report.errors), (3, 1.5, 1));
        assert_eq!((report.p50_us, report.max_us), (200.0, 300.0));
        assert_eq!((report.json_replies, report.sse_replies), (1, 1));
        assert_eq!(report.server_cpu_us_per_req, Some(10.0));
        assert_eq!(report.side_cpu_us_per_req, [("redis".to_owned(), 2.0)]);
        assert_eq!(report.client_cpu_us_per_req, 1.0);
        assert_eq!(report.client.as_deref(), Some("ours"));
    }
}
