//! Waiting for the machine to be idle before each run: on a small shared machine a compile in
//! the background halves a server's throughput, so runs start when nothing else is busy, or
//! are counted as started on a busy machine.

use std::time::{Duration, Instant};

/// The machine counts as idle below this share of all its CPU time in use.
const IDLE_BELOW: f64 = 0.10;
/// How long each reading of `/proc/stat` lasts.
const SAMPLE: Duration = Duration::from_millis(200);
/// The most the suite waits in all, whatever `--quiet-wait` says per run.
const TOTAL_BUDGET: Duration = Duration::from_secs(180);

/// Waits for quiet before runs, and remembers how that went.
#[derive(Debug)]
pub(crate) struct Quiet {
    per_run: Duration,
    waited: Duration,
    runs: u32,
    busy_runs: u32,
}

impl Quiet {
    /// Waits up to `per_run` seconds before each run (0: never).
    pub(crate) fn new(per_run: f64) -> Quiet {
        Quiet {
            per_run: Duration::try_from_secs_f64(per_run).unwrap_or_default(),
            waited: Duration::ZERO,
            runs: 0,
            busy_runs: 0,
        }
    }

    /// Returns once the machine is idle, or once it has waited long enough.
    pub(crate) fn wait(&mut self) {
        self.runs += 1;
        if self.per_run.is_zero() {
            return;
        }
        let start = Instant::now();
        loop {
            let busy = busy_share(SAMPLE);
            if busy.is_none_or(|b| b < IDLE_BELOW) {
                break;
            }
            if start.elapsed() >= self.per_run || self.waited + start.elapsed() >= TOTAL_BUDGET {
                self.busy_runs += 1;
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        self.waited += start.elapsed();
    }

    /// One sentence for the report.
    pub(crate) fn summary(&self) -> String {
        if self.per_run.is_zero() {
            return "Runs did not wait for the machine to be idle (`--quiet-wait 0`).".to_owned();
        }
        let idle = format!("{:.0}% of the CPU in use", IDLE_BELOW * 100.0);
        if self.busy_runs == 0 {
            format!(
                "Every run started on an idle machine (below {idle}); waiting for that took \
                 {:.0} s in all.",
                self.waited.as_secs_f64()
            )
        } else {
            format!(
                "**{} of {} runs started on a busy machine** (other processes used {idle} or \
                 more after waiting up to {:.0} s): their figures are less reliable.",
                self.busy_runs,
                self.runs,
                self.per_run.as_secs_f64()
            )
        }
    }
}

/// The share of all CPU time in use over `window`, from `/proc/stat`.
fn busy_share(window: Duration) -> Option<f64> {
    let (busy0, total0) = cpu_times()?;
    std::thread::sleep(window);
    let (busy1, total1) = cpu_times()?;
    let total = total1.checked_sub(total0)?;
    (total > 0).then(|| busy1.saturating_sub(busy0) as f64 / total as f64)
}

/// Busy and total jiffies of all CPUs: the first line of `/proc/stat`.
fn cpu_times() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is within user).
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}
