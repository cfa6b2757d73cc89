//! Several nodes on Redis: the suite's `redis-server`, idle sessions in Redis, the failover
//! trials (`mcp-failover`), and the section "Several nodes (Redis)" beside the in-memory rows.

use std::fmt::Write as _;
use std::process::{Command, Stdio};

use anyhow::Context as _;

use super::cells::Calls;
use super::figures::{ratio, verdict};
use super::kinds;
use super::servers::Launcher;
use crate::redis::Redis;
use crate::report::{FailoverReport, IdleReport};

/// Target: server and Redis CPU per request of one node on Redis, at most this multiple of
/// the in-memory server's.
const ONE_NODE_TARGET: f64 = 1.3;
/// Targets of two nodes round robin: server and Redis CPU per request at most this multiple of
/// in-memory, requests per second at least this share of one in-memory node's, p99 at most
/// this multiple of one node on Redis.
const TWO_NODES_CPU_TARGET: f64 = 3.0;
const TWO_NODES_RPS_TARGET: f64 = 0.3;
const TWO_NODES_P99_TARGET: f64 = 3.0;
/// Target: the nodes' CPU per request when every request hops, at most this multiple of
/// in-memory (and Redis's CPU per request no more than one node's).
const HOP_CPU_TARGET: f64 = 3.5;
/// Target: failover, median and worst, in milliseconds.
const FAILOVER_MEDIAN_TARGET_MS: f64 = 800.0;
const FAILOVER_WORST_TARGET_MS: f64 = 1000.0;
/// Target: bytes in Redis per idle session (past the resume window) at most this.
const IDLE_TARGET_BYTES: f64 = 1024.0;

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
    /// Redis's `used_memory` before the sessions, right after, and past the resume window, in
    /// bytes.
    pub(crate) used_before: u64,
    pub(crate) used_after: u64,
    pub(crate) used_idle: u64,
    /// Keys before, and past the resume window.
    pub(crate) keys_before: u64,
    pub(crate) keys_after: u64,
    /// Redis's `connected_clients` with the node up, the suite's own connection not counted.
    pub(crate) node_connections: u64,
    /// `MEMORY USAGE` of one session's keys, by kind.
    pub(crate) keys: Vec<(String, u64)>,
}

impl RedisIdle {
    /// Past the resume window: what an idle session holds.
    fn bytes_per_session(&self) -> f64 {
        self.used_idle.saturating_sub(self.used_before) as f64 / self.node.sessions_ok.max(1) as f64
    }

    /// Right after the sessions started: their `initialize` answers kept too.
    fn bytes_per_new_session(&self) -> f64 {
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
    let kind = kinds::find("ours-redis-idle").context("a known server")?;
    let server = launcher.start(kind)?;
    let used_before = redis.info_number("memory", "used_memory")?;
    let keys_before = redis.dbsize()?;
    let node: IdleReport = launcher.load(&server.idle_args(sessions, true))?;
    let used_after = redis.info_number("memory", "used_memory")?;
    // Past the node's resume window (1 s), every key looked at once, so that Redis reclaims
    // the expired ones it has not swept yet.
    std::thread::sleep(std::time::Duration::from_secs(3));
    redis.sweep()?;
    let keys = redis.session_keys("mcp")?;
    let idle = RedisIdle {
        used_after,
        used_idle: redis.info_number("memory", "used_memory")?,
        keys_after: redis.dbsize()?,
        // The connection that asks is counted by Redis too.
        node_connections: redis
            .info_number("clients", "connected_clients")?
            .saturating_sub(1),
        keys,
        node,
        used_before,
        keys_before,
    };
    eprintln!(
        "idle in Redis: {} sessions, {:.0} bytes ({:.0} before the window) and {:.1} keys \
         each; {} Redis connections of the node; node VmRSS {:.2} KiB/session",
        idle.node.sessions_ok,
        idle.bytes_per_session(),
        idle.bytes_per_new_session(),
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
pub(crate) fn section(
    calls: &Calls,
    nodes: &NodesResults,
    idle_sessions: usize,
    context: &str,
) -> String {
    let mut out = format!(
        "\n## Several nodes (Redis)\n\n{context}\n\n\
         The echo server with `--redis` (`mcp_streamable_http::redis`: the cluster, with its \
         event store and session store, in Redis, default options) against `ours` (in \
         memory), in the same runs of the throughput table, interleaved with it. The suite \
         starts its own `redis-server` (loopback, a temporary directory, no persistence), \
         pinned with the servers; its CPU (`/proc/PID/stat` of `redis-server`) is counted \
         apart, as is the proxy's (`mcp-proxy`, pinned with the load generator). Two nodes: \
         round robin per request (half the requests reach the node that does not hold their \
         session), or every request sent away from its session's holder (`--away`); either \
         way a request that reaches the other node goes on to the holder over HTTP/2. Medians \
         of the runs; ratios against `ours` of the same runs.\n\n"
    );
    out += &throughput(calls);
    out += &failover_section(nodes.failover.as_ref());
    out += &idle_section(nodes.idle.as_ref(), idle_sessions);
    out
}

/// The rows of several nodes, beside `ours`.
const ROWS: [&str; 4] = ["ours", "ours-redis", "ours-redis-2", "ours-redis-hop"];

fn throughput(calls: &Calls) -> String {
    let mut out = String::new();
    let concurrencies = calls.concurrencies();
    let run = ROWS[1..]
        .iter()
        .any(|key| concurrencies.iter().any(|&c| calls.cell(key, c).is_some()));
    if !run {
        return "Throughput: not run (`--servers` without `ours-redis`, `ours-redis-2`, \
                `ours-redis-hop`).\n"
            .into();
    }
    out += "| sessions | server | req/s | p99 µs | server CPU µs/req | ÷ in memory | Redis CPU \
            µs/req | server + Redis ÷ in memory | proxy CPU µs/req | errors |\n\
            |--:|---|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    let mut targets = String::new();
    for &c in &concurrencies {
        let summary = |key: &str| calls.cell(key, c).map(|cell| cell.summary());
        let base = summary("ours");
        let base_cpu = base.and_then(|b| b.cpu).unwrap_or(f64::NAN);
        for key in ROWS {
            let Some(cell) = calls.cell(key, c) else {
                continue;
            };
            let s = cell.summary();
            let redis = cell.side_cpu("redis");
            let proxy = cell.side_cpu("proxy");
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
        }
        targets += &targets_at(calls, c);
    }
    out += "\nTargets:\n\n";
    out += &targets;
    out
}

/// The targets of several nodes at concurrency `c`.
fn targets_at(calls: &Calls, c: usize) -> String {
    let mut out = String::new();
    let cell = |key: &str| calls.cell(key, c);
    let Some(base) = cell("ours").map(|cell| cell.summary()) else {
        return out;
    };
    let base_cpu = base.cpu.unwrap_or(f64::NAN);
    // Server and Redis CPU per request, Redis's alone, and the summary, of a row.
    let costs = |key: &str| {
        cell(key).map(|cell| {
            let s = cell.summary();
            let redis = cell.side_cpu("redis").unwrap_or(0.0);
            (s.cpu.unwrap_or(f64::NAN) + redis, redis, s)
        })
    };
    let one = costs("ours-redis");
    if let Some((total, _, s)) = one {
        let r = total / base_cpu;
        let _ = writeln!(
            out,
            "- C = {c}, one node on Redis: server + Redis CPU per request ÷ in memory {r:.2}x \
             (≤ {ONE_NODE_TARGET}x): {}; requests per second {}.",
            verdict(r <= ONE_NODE_TARGET),
            ratio(s.rps, base.rps),
        );
    }
    if let Some((total, _, s)) = costs("ours-redis-2") {
        let r = total / base_cpu;
        let share = s.rps / base.rps;
        let p99 = one.map_or(f64::NAN, |(_, _, one)| s.p99 / one.p99);
        let _ = writeln!(
            out,
            "- C = {c}, two nodes round robin: server + Redis CPU per request ÷ in memory \
             {r:.2}x (≤ {TWO_NODES_CPU_TARGET}x): {}; requests per second {share:.2}x one \
             in-memory node's (≥ {TWO_NODES_RPS_TARGET}x): {}; p99 {p99:.2}x one node on \
             Redis's (≤ {TWO_NODES_P99_TARGET}x): {}.",
            verdict(r <= TWO_NODES_CPU_TARGET),
            verdict(share >= TWO_NODES_RPS_TARGET),
            verdict(p99 <= TWO_NODES_P99_TARGET),
        );
    }
    if let Some((total, redis, s)) = costs("ours-redis-hop") {
        let nodes = total - redis;
        let r = nodes / base_cpu;
        let one_redis = one.map_or(f64::NAN, |(_, redis, _)| redis);
        let _ = writeln!(
            out,
            "- C = {c}, every request hops: the nodes' CPU per request ÷ in memory {r:.2}x \
             (≤ {HOP_CPU_TARGET}x): {}; Redis CPU per request {redis:.1} µs against one \
             node's {one_redis:.1} µs (no more): {}; requests per second {}.",
            verdict(r <= HOP_CPU_TARGET),
            verdict(redis <= one_redis * 1.05),
            ratio(s.rps, base.rps),
        );
    }
    out
}

fn failover_section(report: Option<&FailoverReport>) -> String {
    let mut out = String::from(
        "\n### Failover\n\n\
         `mcp-failover`: a node B, then per trial a node A on which a session is opened \
         (Redis's `P:{S}` checked to name A as its holder), a `progress` call through B (sent \
         on to A over HTTP/2, its events relayed), `kill -9` of A once the first progress \
         notification is on B's stream, and the time from the kill to the call's response on \
         B's stream: the error with which B, taking the session over once A's lease lapsed, \
         answers what the dead holder left unanswered. Then an `echo` through B checks that \
         the session goes on. Defaults: lease 750 ms, renewed every 250 ms; the kills fall at \
         phases spread over the renewal period.\n\n",
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
         Each trial, ms: {}. Targets: median at most {FAILOVER_MEDIAN_TARGET_MS:.0} ms: {}; \
         worst at most {FAILOVER_WORST_TARGET_MS:.0} ms: {}.",
        report.times_ms.len(),
        report.median_ms,
        report.went_on,
        report.errors,
        times.join(", "),
        verdict(report.median_ms <= FAILOVER_MEDIAN_TARGET_MS),
        verdict(max <= FAILOVER_WORST_TARGET_MS),
    );
    for sample in &report.error_samples {
        let _ = writeln!(out, "- {sample}");
    }
    out
}

fn idle_section(idle: Option<&RedisIdle>, sessions: usize) -> String {
    let mut out = format!(
        "\n### Idle sessions in Redis\n\n\
         One node with a resume window of 1 s (`--resume-window 1`), a Redis emptied first \
         (`FLUSHALL`); `mcp-load --mode idle --close`: {sessions} sessions, each `initialize` \
         and `notifications/initialized`, connection closed. Redis's `used_memory` (`INFO \
         memory`) before, right after (each session's `initialize` answer still kept for a \
         client to resume), and 3 s later with every key looked at once (`SCAN`, so that Redis \
         reclaims what expired), divided by the sessions; the keys (`DBSIZE`) then; Redis's \
         `connected_clients` (`INFO clients`) with the node up, the suite's own connection not \
         counted. Where the bytes go: `MEMORY USAGE` of one session's keys (`SAMPLES 0`) then, \
         by key; the rest is Redis's own bookkeeping of each key.\n\n"
    );
    let Some(idle) = idle else {
        out += "Not run.\n";
        return out;
    };
    let bytes = idle.bytes_per_session();
    let _ = writeln!(
        out,
        "| sessions | Redis bytes/session, idle | right after | keys/session | Redis \
         connections of the node | node VmRSS KiB/session |\n|--:|--:|--:|--:|--:|--:|\n\
         | {} | {bytes:.0} | {:.0} | {:.1} | {} | {:.2} |\n\n\
         One session's keys: {}.\n\n\
         Target: at most {IDLE_TARGET_BYTES:.0} bytes per idle session in Redis: {}.",
        idle.node.sessions_ok,
        idle.bytes_per_new_session(),
        idle.keys_per_session(),
        idle.node_connections,
        idle.node.kib_per_session,
        key_sizes(&idle.keys),
        verdict(bytes <= IDLE_TARGET_BYTES),
    );
    out
}

/// `session` 234 B, ... and their sum.
fn key_sizes(keys: &[(String, u64)]) -> String {
    let total: u64 = keys.iter().map(|(_, bytes)| bytes).sum();
    let each: Vec<String> = keys
        .iter()
        .map(|(kind, bytes)| format!("{kind} {bytes} B"))
        .collect();
    format!("{} (sum {total} B)", each.join(", "))
}
