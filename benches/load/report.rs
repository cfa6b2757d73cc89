//! What `mcp-load --json`, `mcp-client-load --json` and `mcp-failover --json` print, one JSON
//! object per run, and what `mcp-load-suite` reads back: one definition for writer and reader,
//! so that they cannot drift apart.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Prints `report`: one JSON object with `json`, else its text for a person.
pub(crate) fn print<R: Serialize + fmt::Display>(report: &R, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
    } else {
        print!("{report}");
    }
    Ok(())
}

/// One closed-loop run of `tools/call echo` over a measured window, whoever made the calls:
/// `mcp-load --mode calls`, a session (and a connection) per caller, or `mcp-client-load`,
/// callers sharing the one session of a client library.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CallsReport {
    /// The client library that made the calls (`mcp-client-load --client`); none for
    /// `mcp-load`'s own sessions.
    #[serde(default)]
    pub(crate) client: Option<String>,
    /// Callers, each with one call in flight: `mcp-load`'s sessions, or the tasks sharing
    /// `mcp-client-load`'s session.
    pub(crate) concurrency: usize,
    /// Sessions that started and ran to the end (`mcp-client-load`: its one).
    pub(crate) sessions_ok: usize,
    /// Length of the measured window, in seconds (as measured, not as asked).
    pub(crate) seconds: f64,
    /// `tools/call` requests answered correctly within the window.
    pub(crate) requests: u64,
    /// `requests / seconds`.
    pub(crate) rps: f64,
    /// Median latency within the window, in microseconds.
    pub(crate) p50_us: f64,
    /// 99th percentile, in microseconds.
    pub(crate) p99_us: f64,
    /// Slowest request, in microseconds.
    pub(crate) max_us: f64,
    /// Wrong, missing or failed replies, warm-up included, plus sessions that failed.
    pub(crate) errors: u64,
    /// The first few errors, for the reader.
    pub(crate) error_samples: Vec<String>,
    /// How the replies came: JSON bodies within the window (`mcp-load` only: a client library
    /// does not say).
    pub(crate) json_replies: u64,
    /// Replies that came as `text/event-stream`.
    pub(crate) sse_replies: u64,
    /// Server CPU (user + system) per request in the window, in microseconds, given a PID.
    pub(crate) server_cpu_us_per_req: Option<f64>,
    /// Server CPU over the window as a share of one core (1.0 = one core busy).
    pub(crate) server_cpu_share: Option<f64>,
    /// The calling process's own CPU per request (the load generator's, the client's), in
    /// microseconds.
    pub(crate) client_cpu_us_per_req: f64,
    /// The calling process's CPU over the window as a share of one core.
    pub(crate) client_cpu_share: f64,
    /// CPU per request, in microseconds, of the processes given with `--side-pid`, by name
    /// (Redis, a proxy): counted apart from the server's.
    #[serde(default)]
    pub(crate) side_cpu_us_per_req: Vec<(String, f64)>,
    /// TCP connections opened on the machine during the window (`ActiveOpens` of
    /// `/proc/net/snmp`): on an otherwise quiet machine, the caller's.
    #[serde(default)]
    pub(crate) tcp_connects: Option<u64>,
    /// The calling process's open sockets in the middle of the window (`/proc/self/fd`).
    #[serde(default)]
    pub(crate) sockets_open: Option<u64>,
}

/// Idle sessions (`--mode idle`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct IdleReport {
    /// Sessions opened, the warm-up one included.
    pub(crate) sessions: usize,
    /// Sessions that initialized.
    pub(crate) sessions_ok: usize,
    /// Whether each session's connection was closed after `notifications/initialized`.
    pub(crate) closed_connections: bool,
    /// The server's `VmRSS` after the warm-up session, in KiB.
    pub(crate) rss_before_kib: u64,
    /// The server's `VmRSS` once every session is open (and a settling pause), in KiB.
    pub(crate) rss_after_kib: u64,
    /// `(after - before) / (sessions_ok - 1)`.
    pub(crate) kib_per_session: f64,
    /// Sessions that failed to open.
    pub(crate) errors: u64,
    /// The first few errors.
    pub(crate) error_samples: Vec<String>,
}

/// Notifications on one session's standalone stream (`--mode stream`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct StreamReport {
    /// Notifications asked for.
    pub(crate) notifications: u64,
    /// Notifications received in order on the GET stream.
    pub(crate) received: u64,
    /// Seconds from the first `flood` call to the last notification.
    pub(crate) seconds: f64,
    /// `received / seconds`.
    pub(crate) per_second: f64,
    /// The server's `VmRSS` when the given number of notifications had arrived: `(count, KiB)`.
    pub(crate) rss_samples_kib: Vec<(u64, u64)>,
    /// The sample at the end over the sample at 10,000 notifications, minus one, in percent.
    pub(crate) growth_percent: f64,
    /// Missing, repeated or malformed notifications, failed calls.
    pub(crate) errors: u64,
    /// The first few errors.
    pub(crate) error_samples: Vec<String>,
}

/// The failover trials of `mcp-failover`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct FailoverReport {
    /// Trials asked for.
    pub(crate) trials: usize,
    /// Each trial that ran to the end: milliseconds from `kill -9` of the holder to the first
    /// message of the new holder on the client's stream (the dead holder's error response).
    pub(crate) times_ms: Vec<f64>,
    /// The median of `times_ms`.
    pub(crate) median_ms: f64,
    /// Progress notifications that arrived after the kill (written before it), per trial.
    pub(crate) progress_after_kill: Vec<u32>,
    /// Trials whose session then served a call through the new holder.
    pub(crate) went_on: usize,
    /// Trials that failed, and the first few reasons.
    pub(crate) errors: u64,
    /// The first few errors.
    pub(crate) error_samples: Vec<String>,
}

/// How long clients waited to learn that their gateway's child died (`mcp-load --mode death`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct DeathReport {
    /// Trials asked for.
    pub(crate) trials: usize,
    /// Each trial whose client saw an error in time: milliseconds from `kill -9` of the child
    /// to the end of the call that waited on it.
    pub(crate) seen_ms: Vec<f64>,
    /// The median of `seen_ms`, if any.
    pub(crate) median_ms: Option<f64>,
    /// Trials whose call was still waiting at the bound: the client was never told.
    pub(crate) not_seen: usize,
    /// What the first clients saw.
    pub(crate) samples: Vec<String>,
    /// Trials that could not run (no session, no process id...), with why.
    pub(crate) errors: Vec<String>,
}

impl fmt::Display for DeathReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self;
        let seen: Vec<String> = r.seen_ms.iter().map(|ms| format!("{ms:.1}")).collect();
        writeln!(
            f,
            "{} trials: error seen after {} ms (median {:.1} ms); never told: {}",
            r.trials,
            seen.join(", "),
            r.median_ms.unwrap_or(f64::NAN),
            r.not_seen
        )?;
        for sample in &r.samples {
            writeln!(f, "  saw: {sample}")?;
        }
        errors(f, r.errors.len() as u64, &r.errors)
    }
}

impl fmt::Display for CallsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self;
        match &r.client {
            Some(client) => writeln!(
                f,
                "{client}: {} callers on one session, {:.2} s: {} requests, {:.0} req/s",
                r.concurrency, r.seconds, r.requests, r.rps
            )?,
            None => writeln!(
                f,
                "{} sessions ({} ran), {:.2} s: {} requests, {:.0} req/s ({} JSON, {} SSE)",
                r.concurrency,
                r.sessions_ok,
                r.seconds,
                r.requests,
                r.rps,
                r.json_replies,
                r.sse_replies
            )?,
        }
        writeln!(
            f,
            "latency: p50 {:.0} us, p99 {:.0} us, max {:.0} us",
            r.p50_us, r.p99_us, r.max_us
        )?;
        if let (Some(per_req), Some(share)) = (r.server_cpu_us_per_req, r.server_cpu_share) {
            writeln!(
                f,
                "server CPU: {per_req:.1} us/request ({:.0}% of a core)",
                share * 100.0
            )?;
        }
        for (name, per_req) in &r.side_cpu_us_per_req {
            writeln!(f, "{name} CPU: {per_req:.1} us/request")?;
        }
        writeln!(
            f,
            "{} CPU: {:.1} us/request ({:.0}% of a core)",
            if r.client.is_some() {
                "client"
            } else {
                "load generator"
            },
            r.client_cpu_us_per_req,
            r.client_cpu_share * 100.0
        )?;
        let or_unknown = |n: Option<u64>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
        writeln!(
            f,
            "TCP connections opened in the window: {}; sockets open mid-window: {}",
            or_unknown(r.tcp_connects),
            or_unknown(r.sockets_open)
        )?;
        errors(f, r.errors, &r.error_samples)
    }
}

impl fmt::Display for IdleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self;
        writeln!(
            f,
            "{} idle sessions ({} opened, connections {}): VmRSS {} KiB -> {} KiB, {:.2} KiB per \
             session",
            r.sessions,
            r.sessions_ok,
            if r.closed_connections {
                "closed"
            } else {
                "open"
            },
            r.rss_before_kib,
            r.rss_after_kib,
            r.kib_per_session
        )?;
        errors(f, r.errors, &r.error_samples)
    }
}

impl fmt::Display for StreamReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self;
        writeln!(
            f,
            "{} of {} notifications in {:.2} s ({:.0}/s); VmRSS growth after the first 10,000: \
             {:+.1}%",
            r.received, r.notifications, r.seconds, r.per_second, r.growth_percent
        )?;
        let samples: Vec<String> = r
            .rss_samples_kib
            .iter()
            .map(|(n, kib)| format!("{n}: {kib} KiB"))
            .collect();
        writeln!(f, "VmRSS: {}", samples.join(", "))?;
        errors(f, r.errors, &r.error_samples)
    }
}

/// The count of errors, then the ones kept, one a line.
fn errors(f: &mut fmt::Formatter<'_>, count: u64, samples: &[String]) -> fmt::Result {
    writeln!(f, "errors: {count}")?;
    for sample in samples {
        writeln!(f, "  {sample}")?;
    }
    Ok(())
}
