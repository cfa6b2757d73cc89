//! Several nodes on Redis: the suite's `redis-server`, idle sessions in Redis, the failover
//! trials (`mcp-failover`), and the section "Several nodes (Redis)" beside the in-memory rows.

#[path = "../nodes/redis.rs"]
mod redis;
#[path = "../nodes/report.rs"]
pub(crate) mod report;

use std::fmt::Write as _;
use std::process::{Command, Stdio};

use anyhow::Context as _;

use crate::report::IdleReport;
use crate::servers::{self, Launcher};
use crate::table::{Results, ratio};

pub(crate) use self::redis::Redis;
use self::report::FailoverReport;

/// Target: server CPU per request of one node on Redis at most this multiple of in-memory.
const CPU_TARGET: f64 = 2.0;
/// Target: failover under this many milliseconds.
const FAILOVER_TARGET_MS: f64 = 2000.0;
/// Target: bytes in Redis per idle session at most this.
const IDLE_TARGET_BYTES: f64 = 2048.0;

/// What the sections of several nodes measured besides the throughput rows.
#[derive(Debug, Default)]
pub(crate) struct NodesResults {
    /// Idle sessions held in Redis.
    pub(crate) idle: Option<RedisIdle>,
    /// The failover trials.
    pub(crate) failover: Option<FailoverReport>,
}

/// Idle sessions of one node, in Redis's own figures.
#[derive(Debug)]
pub(crate) struct RedisIdle {
    /// The load generator's report (the node's own memory among it).
    pub(crate) node: IdleReport,
    /// Redis's `used_memory` before the sessions and after, in bytes.
    pub(crate) used_before: u64,
    pub(crate) used_after: u64,
    /// Keys before and after.
    pub(crate) keys_before: u64,
    pub(crate) keys_after: u64,
    /// Redis's `connected_clients` with the node up, the suite's own connection not counted.
    pub(crate) node_connections: u64,
    /// `MEMORY USAGE` of one session's keys, by kind.
    pub(crate) keys: Vec<(String, u64)>,
}

impl RedisIdle {
    fn bytes_per_session(&self) -> f64 {
        self.used_after.saturating_sub(self.used_before) as f64
            / self.node.sessions_ok.max(1) as f64
    }

    fn keys_per_session(&self) -> f64 {
        self.keys_after.saturating_sub(self.keys_before) as f64
            / self.node.sessions_ok.max(1) as f64
    }
}

/// Starts the suite's Redis, pinned where the servers run.
pub(crate) fn start_redis(launcher: &Launcher) -> anyhow::Result<Redis> {
    let redis = Redis::start()?;
    if launcher.pin {
        let pinned = Command::new("taskset")
            .args(["-a", "-c", "-p", "0", &redis.pid.to_string()])
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(pinned.success(), "taskset could not pin redis-server");
    }
    Ok(redis)
}

/// `sessions` idle sessions on one node: what Redis holds for them, and its connections.
pub(crate) fn idle(
    launcher: &Launcher,
    redis: &Redis,
    sessions: usize,
) -> anyhow::Result<RedisIdle> {
    redis.flush()?;
    let kind = servers::find("ours-redis").context("a known server")?;
    let server = launcher.start(kind)?;
    let used_before = redis.info_number("memory", "used_memory")?;
    let keys_before = redis.dbsize()?;
    let args = [
        "--url".to_owned(),
        server.url.clone(),
        "--mode".to_owned(),
        "idle".to_owned(),
        "--sessions".to_owned(),
        sessions.to_string(),
        "--close".to_owned(),
        "--server-pid".to_owned(),
        server.pid.to_string(),
    ];
    let node: IdleReport = launcher.load(&args)?;
    let idle = RedisIdle {
        used_after: redis.info_number("memory", "used_memory")?,
        keys_after: redis.dbsize()?,
        // The connection that asks is counted by Redis too.
        node_connections: redis
            .info_number("clients", "connected_clients")?
            .saturating_sub(1),
        keys: redis.session_keys("mcp")?,
        node,
        used_before,
        keys_before,
    };
    eprintln!(
        "idle in Redis: {} sessions, {:.0} bytes and {:.1} keys each; {} Redis connections of \
         the node; node VmRSS {:.2} KiB/session",
        idle.node.sessions_ok,
        idle.bytes_per_session(),
        idle.keys_per_session(),
        idle.node_connections,
        idle.node.kib_per_session
    );
    Ok(idle)
}

/// `trials` failover trials by `mcp-failover`, on the suite's Redis.
pub(crate) fn failover(
    launcher: &Launcher,
    redis: &Redis,
    trials: usize,
) -> anyhow::Result<FailoverReport> {
    redis.flush()?;
    let args = [
        "--trials".to_owned(),
        trials.to_string(),
        "--redis".to_owned(),
        redis.url.clone(),
        "--echo-server".to_owned(),
        launcher.echo_server.display().to_string(),
    ];
    let report: FailoverReport = launcher.generate("mcp-failover", &args)?;
    eprintln!(
        "failover: median {:.0} ms over {} trials ({:?}), {} errors",
        report.median_ms,
        report.times_ms.len(),
        report.times_ms,
        report.errors
    );
    Ok(report)
}

/// The section "Several nodes (Redis)"; `context` says when and where it was measured, for
/// a reader of this section alone.
pub(crate) fn section(results: &Results, idle_sessions: usize, context: &str) -> String {
    let mut out = format!(
        "\n## Several nodes (Redis)\n\n{context}\n\n\
         The echo server with `--redis` (`mcp_streamable_http::redis`: event store, session \
         store and cluster in Redis, default options) against `ours` (in memory), in the same \
         runs of the throughput table, interleaved with it. The suite starts its own \
         `redis-server` (loopback, a temporary directory, no persistence), pinned with the \
         servers; its CPU (`/proc/PID/stat` of `redis-server`) is counted apart, as is the \
         proxy's (`mcp-proxy`, round robin per request, pinned with the load generator). \
         Medians of the runs; ratios against `ours` of the same runs.\n\n"
    );
    out += &throughput(results);
    out += &failover_section(results.nodes.failover.as_ref());
    out += &idle_section(results.nodes.idle.as_ref(), idle_sessions);
    out
}

fn throughput(results: &Results) -> String {
    let mut out = String::new();
    let concurrencies = results.concurrencies();
    let cells = |key: &str| -> Vec<_> {
        concurrencies
            .iter()
            .filter_map(|&c| results.cell(key, c))
            .collect()
    };
    if cells("ours-redis").is_empty() && cells("ours-redis-2").is_empty() {
        return "Throughput: not run (`--servers` without `ours-redis`, `ours-redis-2`).\n".into();
    }
    out += "| sessions | server | req/s | p99 µs | server CPU µs/req | ÷ in memory | Redis CPU \
            µs/req | server + Redis ÷ in memory | proxy CPU µs/req | errors |\n\
            |--:|---|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    let mut targets = String::new();
    for &c in &concurrencies {
        let base = results.cell("ours", c).map(|cell| cell.summary());
        for key in ["ours", "ours-redis", "ours-redis-2"] {
            let Some(cell) = results.cell(key, c) else {
                continue;
            };
            let s = cell.summary();
            let redis = cell.side_cpu("redis");
            let proxy = cell.side_cpu("proxy");
            let base_cpu = base.and_then(|b| b.cpu).unwrap_or(f64::NAN);
            let cpu = s.cpu.unwrap_or(f64::NAN);
            let with_redis = cpu + redis.unwrap_or(0.0);
            let show = |v: Option<f64>| v.map_or_else(|| "".to_owned(), |v| format!("{v:.1}"));
            let _ = writeln!(
                out,
                "| {c} | {} | {:.0} | {:.0} | {cpu:.1} | {} | {} | {} | {} | {} |",
                cell.server.label,
                s.rps,
                s.p99,
                if key == "ours" {
                    String::new()
                } else {
                    ratio(cpu, base_cpu)
                },
                show(redis),
                if redis.is_some() {
                    ratio(with_redis, base_cpu)
                } else {
                    String::new()
                },
                show(proxy),
                s.errors,
            );
            if key == "ours-redis" && base_cpu.is_finite() {
                let r = cpu / base_cpu;
                let _ = writeln!(
                    targets,
                    "- C = {c}: server CPU per request on Redis ÷ in memory {r:.2}x \
                     (≤ {CPU_TARGET}x): {}; with Redis's own CPU {:.2}x; requests per second \
                     {}.",
                    if r <= CPU_TARGET { "met" } else { "**missed**" },
                    with_redis / base_cpu,
                    ratio(s.rps, base.map_or(f64::NAN, |b| b.rps)),
                );
            }
        }
    }
    out += "\nTargets:\n\n";
    out += &targets;
    out
}

fn failover_section(report: Option<&FailoverReport>) -> String {
    let mut out = String::from(
        "\n### Failover\n\n\
         `mcp-failover`: a node B, then per trial a node A on which a session is opened \
         (Redis's `P:holder:{S}` checked to name A), a `progress` call through B (forwarded \
         to A, its events followed from Redis), `kill -9` of A once the first progress \
         notification is on B's stream, and the time from the kill to the call's response on \
         B's stream: the error with which the node that takes the session over answers what \
         the dead holder left unanswered. Then an `echo` through B checks that the session \
         goes on. Defaults: lease 1.5 s, renewed every 0.5 s.\n\n",
    );
    let Some(report) = report else {
        out += "Not run.\n";
        return out;
    };
    let times: Vec<String> = report.times_ms.iter().map(|t| format!("{t:.0}")).collect();
    let min = report
        .times_ms
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let max = report.times_ms.iter().copied().fold(0.0, f64::max);
    let _ = writeln!(
        out,
        "| trials | median | min | max | went on | errors |\n|--:|--:|--:|--:|--:|--:|\n\
         | {} | {:.0} ms | {min:.0} ms | {max:.0} ms | {} | {} |\n\n\
         Each trial, ms: {}. Target: under {FAILOVER_TARGET_MS:.0} ms: {}.",
        report.times_ms.len(),
        report.median_ms,
        report.went_on,
        report.errors,
        times.join(", "),
        if report.median_ms < FAILOVER_TARGET_MS {
            "met"
        } else {
            "**missed**"
        },
    );
    for sample in &report.error_samples {
        let _ = writeln!(out, "- {sample}");
    }
    out
}

fn idle_section(idle: Option<&RedisIdle>, sessions: usize) -> String {
    let mut out = format!(
        "\n### Idle sessions in Redis\n\n\
         One node, a Redis emptied first (`FLUSHALL`); `mcp-load --mode idle --close`: \
         {sessions} sessions, each `initialize` and `notifications/initialized`, connection \
         closed. Redis's `used_memory` (`INFO memory`) and key count (`DBSIZE`) before and \
         after, divided by the sessions; Redis's `connected_clients` (`INFO clients`) with \
         the node up, the suite's own connection not counted. Where the bytes go: `MEMORY \
         USAGE` of one session's keys (`SAMPLES 0`), by key.\n\n"
    );
    let Some(idle) = idle else {
        out += "Not run.\n";
        return out;
    };
    let bytes = idle.bytes_per_session();
    let _ = writeln!(
        out,
        "| sessions | Redis bytes/session | keys/session | Redis connections of the node | \
         node VmRSS KiB/session |\n|--:|--:|--:|--:|--:|\n\
         | {} | {bytes:.0} | {:.1} | {} | {:.2} |\n\n\
         One session's keys: {}.\n\n\
         Target: at most {IDLE_TARGET_BYTES:.0} bytes per idle session in Redis: {}.",
        idle.node.sessions_ok,
        idle.keys_per_session(),
        idle.node_connections,
        idle.node.kib_per_session,
        key_sizes(&idle.keys),
        if bytes <= IDLE_TARGET_BYTES {
            "met"
        } else {
            "**missed**"
        },
    );
    out
}

/// `P:session:{S}` 1,234 B, ... and their sum.
fn key_sizes(keys: &[(String, u64)]) -> String {
    let total: u64 = keys.iter().map(|(_, bytes)| bytes).sum();
    let each: Vec<String> = keys
        .iter()
        .map(|(kind, bytes)| format!("`P:{kind}:{{S}}` {bytes} B"))
        .collect();
    format!("{} (sum {total} B)", each.join(", "))
}
