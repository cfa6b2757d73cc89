//! What `mcp-load --json`, `mcp-client-load --json` and `mcp-failover --json` print, one JSON
//! object per run, and what `mcp-load-suite` reads back: one definition for writer and reader,
//! so that they cannot drift apart.

use serde::{Deserialize, Serialize};

/// One closed-loop run (`--mode calls`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CallsReport {
    /// Sessions asked for.
    pub(crate) concurrency: usize,
    /// Sessions that initialized and ran to the end.
    pub(crate) sessions_ok: usize,
    /// Length of the measured window, in seconds (as measured, not as asked).
    pub(crate) seconds: f64,
    /// `tools/call` requests answered correctly within the window.
    pub(crate) requests: u64,
    /// `requests / seconds`.
    pub(crate) rps: f64,
    /// Latency percentiles and maximum within the window, in microseconds.
    pub(crate) p50_us: f64,
    /// 99th percentile, in microseconds.
    pub(crate) p99_us: f64,
    /// Slowest request, in microseconds.
    pub(crate) max_us: f64,
    /// Wrong, missing or failed replies, warm-up included, plus sessions that failed to start.
    pub(crate) errors: u64,
    /// The first few errors, for the reader.
    pub(crate) error_samples: Vec<String>,
    /// How the replies came: JSON bodies and SSE bodies, within the window.
    pub(crate) json_replies: u64,
    /// Replies that came as `text/event-stream`.
    pub(crate) sse_replies: u64,
    /// Server CPU (user + system) per request in the window, in microseconds, given a PID.
    pub(crate) server_cpu_us_per_req: Option<f64>,
    /// Server CPU over the window as a share of one core (1.0 = one core busy).
    pub(crate) server_cpu_share: Option<f64>,
    /// The load generator's own CPU per request, in microseconds.
    pub(crate) client_cpu_us_per_req: f64,
    /// The load generator's CPU over the window as a share of one core.
    pub(crate) client_cpu_share: f64,
    /// CPU per request, in microseconds, of the processes given with `--side-pid`, by name
    /// (Redis, a proxy): counted apart from the server's.
    #[serde(default)]
    pub(crate) side_cpu_us_per_req: Vec<(String, f64)>,
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

/// One closed-loop run of a client library (`mcp-client-load`): `callers` tasks sharing one
/// session of one client.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ClientReport {
    /// Which client: `ours`, `rmcp` or `rmcp-pooled`.
    pub(crate) client: String,
    /// Concurrent callers on the one session.
    pub(crate) callers: usize,
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
    /// Wrong, missing or failed replies, warm-up included, and failures of the session itself.
    pub(crate) errors: u64,
    /// The first few errors, for the reader.
    pub(crate) error_samples: Vec<String>,
    /// The client process's CPU (user + system) per request in the window, in microseconds.
    pub(crate) client_cpu_us_per_req: f64,
    /// The client process's CPU over the window as a share of one core.
    pub(crate) client_cpu_share: f64,
    /// Server CPU per request in the window, in microseconds, given a PID.
    pub(crate) server_cpu_us_per_req: Option<f64>,
    /// Server CPU over the window as a share of one core.
    pub(crate) server_cpu_share: Option<f64>,
    /// TCP connections opened on the machine during the window (`ActiveOpens` of
    /// `/proc/net/snmp`): on an otherwise quiet machine, the client's.
    pub(crate) tcp_connects: Option<u64>,
    /// The client's open sockets in the middle of the window (`/proc/self/fd`).
    pub(crate) sockets_open: Option<u64>,
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
