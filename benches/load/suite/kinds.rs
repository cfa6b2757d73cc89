//! The servers the suite knows: what each is, whose it is, how the load generator speaks to
//! it, and which program runs it ([`SERVERS`]); `servers.rs` starts them.

/// A server the suite can measure.
#[derive(Debug, Clone)]
pub(crate) struct ServerKind {
    /// Short name, for `--servers`.
    pub(crate) key: &'static str,
    /// What the tables call it.
    pub(crate) label: &'static str,
    /// What it is, for the notes under the tables.
    pub(crate) description: &'static str,
    /// Whose server it is, for the ratios.
    pub(crate) peer: Peer,
    /// How the load generator speaks to it.
    pub(crate) family: Family,
    pub(super) program: Program,
    pub(super) args: &'static [&'static str],
}

/// Whose server a [`ServerKind`] is: ours is compared with the others of its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    Ours,
    Rmcp,
    TowerMcp,
    Ceiling,
    /// Ours as built from another commit (`--baseline`): compared with ours, A/B.
    Baseline,
}

/// The protocol family the load generator speaks to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// Sessions: `initialize`, then calls with the session id (2025-06-18).
    Sessions,
    /// 2026-07-28: no session, `_meta` and mirrored headers on every call.
    PerRequest,
}

impl Family {
    /// What `mcp-load` is told to speak this family.
    pub(crate) fn load_args(self) -> &'static [&'static str] {
        match self {
            Family::Sessions => &[],
            Family::PerRequest => &["--protocol", "2026-07-28"],
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Program {
    /// `examples/echo_server` of the workspace.
    EchoServer,
    /// `examples/echo_server --redis URL`, this many nodes on the suite's Redis; with more
    /// than one, `mcp-proxy` in front of them, sending each request to the next node, or, with
    /// `away`, to a node other than its session's holder.
    RedisNodes { nodes: u8, away: bool },
    /// A binary of the `benches` package, next to the suite's own.
    Bench(&'static str),
    /// `examples/echo_server` protected by the suite's authority (`auth.rs`): bearer tokens,
    /// or, with `dpop`, DPoP-bound ones with a proof per request.
    Protected { dpop: bool },
    /// The echo server built from the baseline commit (`--baseline-echo-server`), run as the
    /// server of key `of` is.
    Baseline { of: &'static str },
    /// `examples/echo_server` with `OTEL_EXPORTER_OTLP_ENDPOINT` at an OTLP/HTTP sink the
    /// suite starts for it (`otlp_sink.rs`), and the metrics exported every
    /// [`METRIC_EXPORT_INTERVAL_MS`]; with `sampled`, the traces sampled at that ratio
    /// (`parentbased_traceidratio`).
    Otlp { sampled: Option<&'static str> },
}

/// `OTEL_TRACES_SAMPLER_ARG` of the row `ours-otlp-sampled`.
const OTLP_SAMPLED_RATIO: &str = "0.1";

/// The rows run only when asked for (`--servers`): the variants of ours measured beside
/// `ours` for one question each, and the baseline's.
pub(crate) const ASKED_ONLY: &[&str] = &[
    "ours-no-store",
    "ours-otel",
    "ours-otlp",
    "ours-otlp-sampled",
    "base",
    "base-26",
];

/// `OTEL_METRIC_EXPORT_INTERVAL` of the row `ours-otlp`, in milliseconds: OpenTelemetry's
/// default is 60 s; at 5 s, each run's window holds a metrics export.
pub(super) const METRIC_EXPORT_INTERVAL_MS: &str = "5000";

/// Every server the suite knows, in table order; those of [`ASKED_ONLY`] run only when asked
/// for (the baseline's by default with `--baseline-echo-server`). The `-26` ones are the same programs spoken to the per-request way of 2026-07-28.
pub(crate) const SERVERS: &[ServerKind] = &[
    ServerKind {
        key: "ours",
        label: "ours, stateful, SSE",
        description: "`examples/echo_server` as users run it: stateful, SSE replies, in-memory \
                      event store (resumable streams) on",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::EchoServer,
        args: &[],
    },
    ServerKind {
        key: "ours-json",
        label: "ours, JSON responses",
        description: "`echo_server --json-response`: stateful, event store on, replies as \
                      `application/json`",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::EchoServer,
        args: &["--json-response"],
    },
    ServerKind {
        key: "ours-stateless",
        label: "ours, stateless",
        description: "`echo_server --stateless`: no sessions, SSE replies",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::EchoServer,
        args: &["--stateless"],
    },
    ServerKind {
        key: "ours-no-store",
        label: "ours, SSE, no event store",
        description: "`echo_server --no-event-store`: stateful, SSE replies, streams not \
                      resumable",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::EchoServer,
        args: &["--no-event-store"],
    },
    ServerKind {
        key: "ours-otel",
        label: "ours, OpenTelemetry exported",
        description: "`echo_server --metrics 127.0.0.1:0`: as `ours`, with OpenTelemetry's SDK \
                      installed (the server's `otel` feature records into a meter provider \
                      whose Prometheus reader serves `/metrics`) where `ours` records into the \
                      no-op providers; run only when asked for, beside `ours` (issue 29)",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::EchoServer,
        args: &["--metrics", "127.0.0.1:0"],
    },
    ServerKind {
        key: "ours-otlp",
        label: "ours, spans and metrics over OTLP",
        description: "`examples/echo_server` as `ours`, with `OTEL_EXPORTER_OTLP_ENDPOINT` at an \
                      OTLP/HTTP sink the suite runs on loopback (protobuf): every span goes \
                      through the SDK's batch processor and is encoded and sent, and the \
                      metrics by its periodic reader every 5 s (`OTEL_METRIC_EXPORT_INTERVAL=\
                      5000`; the default is 60 s). The sink, a thread of the suite pinned \
                      beside the load generator, answers each export with an empty 200 and \
                      counts it; a run during which no span arrived counts as failed. Run only \
                      when asked for, beside `ours` (issue 29)",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::Otlp { sampled: None },
        args: &[],
    },
    ServerKind {
        key: "ours-otlp-sampled",
        label: "ours, over OTLP, 1 trace in 10",
        description: "as `ours-otlp`, with `OTEL_TRACES_SAMPLER=parentbased_traceidratio` and \
                      `OTEL_TRACES_SAMPLER_ARG=0.1`, OpenTelemetry's standard variables: a \
                      request whose `_meta` carries no sampled parent (the load generator's \
                      carry none) is recorded and exported one time in ten, by its trace id; \
                      the metrics as before. Run only when asked for, beside `ours` (issue 29)",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::Otlp {
            sampled: Some(OTLP_SAMPLED_RATIO),
        },
        args: &[],
    },
    ServerKind {
        key: "base",
        label: "baseline, stateful, SSE",
        description: "`examples/echo_server` built from the baseline commit \
                      (`--baseline-echo-server`, which `cargo xtask bench --baseline REV` \
                      builds), run as `ours` is, interleaved with it",
        peer: Peer::Baseline,
        family: Family::Sessions,
        program: Program::Baseline { of: "ours" },
        args: &[],
    },
    ServerKind {
        key: "ours-bearer",
        label: "ours, bearer JWT",
        description: "`echo_server --auth-issuer ISS --auth-jwks-url URL --auth-audience AUD \
                      --auth-scope mcp`: as `ours`, every request with a bearer JWT (RS256) the \
                      guard verifies (its cache of verified tokens on, as by default)",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::Protected { dpop: false },
        args: &[],
    },
    ServerKind {
        key: "ours-dpop",
        label: "ours, DPoP-bound JWT",
        description: "as `ours-bearer` with `--auth-dpop`: the token bound to the load \
                      generator's P-256 key (`cnf.jkt`), every POST with a fresh DPoP proof \
                      (ES256) that the guard verifies, its `jti` remembered",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::Protected { dpop: true },
        args: &[],
    },
    ServerKind {
        key: "ours-redis",
        label: "ours on Redis, one node",
        description: "`echo_server --redis URL`: as `ours`, with the event store, the session \
                      store and the cluster in the suite's `redis-server` (pinned beside it); \
                      Redis's CPU is counted apart",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::RedisNodes {
            nodes: 1,
            away: false,
        },
        args: &[],
    },
    ServerKind {
        key: "ours-redis-2",
        label: "ours on Redis, two nodes, round robin",
        description: "two nodes of `echo_server --redis URL` behind `mcp-proxy`, which sends \
                      each request to the next node, so half the requests of a session reach \
                      the node that does not hold it and go on to the holder over HTTP/2; \
                      server CPU is both nodes' (pinned together), Redis's and the proxy's \
                      (pinned beside the load generator) counted apart",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::RedisNodes {
            nodes: 2,
            away: false,
        },
        args: &[],
    },
    ServerKind {
        key: "ours-redis-hop",
        label: "ours on Redis, two nodes, every request hops",
        description: "as `ours-redis-2`, with `mcp-proxy --away`: every request of a session \
                      reaches the node that does not hold it (the proxy remembers which node \
                      answered each `initialize`) and goes on to the holder over HTTP/2",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::RedisNodes {
            nodes: 2,
            away: true,
        },
        args: &[],
    },
    ServerKind {
        key: "ours-redis-idle",
        label: "ours on Redis, one node, a resume window of 1 s",
        description: "as `ours-redis`, with `--resume-window 1`: the idle sessions' section \
                      measures them past the window too",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::RedisNodes {
            nodes: 1,
            away: false,
        },
        args: &["--resume-window", "1"],
    },
    ServerKind {
        key: "rmcp",
        label: "rmcp 3.11.0, stateful, SSE",
        description: "`rmcp-echo`: rmcp 3.11.0's `StreamableHttpService` with \
                      `LocalSessionManager`, `legacy_session_mode: true`, `json_response: \
                      false`, otherwise its defaults; the same `echo` tool, written without \
                      macros",
        peer: Peer::Rmcp,
        family: Family::Sessions,
        program: Program::Bench("rmcp-echo"),
        args: &[],
    },
    ServerKind {
        key: "rmcp-on-ours",
        label: "rmcp's handler on ours (mcp-rmcp)",
        description: "`rmcp-echo --on-ours`: the same rmcp `ServerHandler` as `rmcp`, served by \
                      our server through `mcp-rmcp`, one rmcp service per session, configured \
                      as `echo_server` is by default (stateful, SSE replies, in-memory event \
                      store) and served by the server crate's `serve`: what an rmcp user sees \
                      on switching transports (issue 32)",
        peer: Peer::Ours,
        family: Family::Sessions,
        program: Program::Bench("rmcp-echo"),
        args: &["--on-ours"],
    },
    ServerKind {
        key: "tower-mcp",
        label: "tower-mcp 0.25.0, stateful, SSE",
        description: "`tower-mcp-echo`: tower-mcp 0.25.0's `HttpTransport` (features `http`, \
                      `protocol-2026-07-28`) with `sse_responses(true)`, otherwise its defaults \
                      (sessions from `initialize`, optional; in-memory event store of 1,000 \
                      events per session), served by hyper at `/`; the same `echo` tool, raw \
                      arguments. Its SSE reply to a POST is the finished JSON-RPC response \
                      wrapped as one event, without an event id: its event store keeps the GET \
                      stream's events, not these, so a reply is not resumable as ours is",
        peer: Peer::TowerMcp,
        family: Family::Sessions,
        program: Program::Bench("tower-mcp-echo"),
        args: &[],
    },
    ServerKind {
        key: "ceiling",
        label: "ceiling (bare hyper)",
        description: "`mcp-ceiling`: bare hyper HTTP/1.1 answering each POST with the JSON-RPC \
                      result, found by string search, no JSON parsing",
        peer: Peer::Ceiling,
        family: Family::Sessions,
        program: Program::Bench("mcp-ceiling"),
        args: &[],
    },
    ServerKind {
        key: "ours-26",
        label: "ours, 2026-07-28 per request",
        description: "`examples/echo_server` as users run it (it serves both families on one \
                      endpoint), spoken to the per-request way: no session, so no event store \
                      in play; replies in JSON (SPEC M5)",
        peer: Peer::Ours,
        family: Family::PerRequest,
        program: Program::EchoServer,
        args: &[],
    },
    ServerKind {
        key: "base-26",
        label: "baseline, 2026-07-28 per request",
        description: "the baseline's echo server spoken to the per-request way, as `ours-26`",
        peer: Peer::Baseline,
        family: Family::PerRequest,
        program: Program::Baseline { of: "ours-26" },
        args: &[],
    },
    ServerKind {
        key: "rmcp-26",
        label: "rmcp 3.11.0, 2026-07-28 per request",
        description: "`rmcp-echo` as above (rmcp 3.11.0 routes 2026-07-28 requests to its \
                      stateless path whatever `legacy_session_mode` says), spoken to the \
                      per-request way",
        peer: Peer::Rmcp,
        family: Family::PerRequest,
        program: Program::Bench("rmcp-echo"),
        args: &[],
    },
    ServerKind {
        key: "tower-mcp-26",
        label: "tower-mcp 0.25.0, 2026-07-28 per request",
        description: "`tower-mcp-echo --json-response`: tower-mcp's defaults (JSON replies), \
                      spoken to the per-request way",
        peer: Peer::TowerMcp,
        family: Family::PerRequest,
        program: Program::Bench("tower-mcp-echo"),
        args: &["--json-response"],
    },
    ServerKind {
        key: "ceiling-26",
        label: "ceiling (bare hyper), 2026-07-28 requests",
        description: "`mcp-ceiling` sent the per-request requests (with their `_meta` and \
                      headers), which it answers as any other: the ceiling for that mode",
        peer: Peer::Ceiling,
        family: Family::PerRequest,
        program: Program::Bench("mcp-ceiling"),
        args: &[],
    },
];

impl ServerKind {
    /// Whether it is served behind the suite's authority.
    pub(crate) fn is_protected(&self) -> bool {
        matches!(self.program, Program::Protected { .. })
    }

    /// Whether it needs the suite's Redis.
    pub(crate) fn needs_redis(&self) -> bool {
        matches!(self.program, Program::RedisNodes { .. })
    }

    /// For a baseline server, the key of ours it is compared with.
    pub(crate) fn baseline_of(&self) -> Option<&'static str> {
        match self.program {
            Program::Baseline { of } => Some(of),
            _ => None,
        }
    }
}

/// The server with this key.
pub(crate) fn find(key: &str) -> Option<&'static ServerKind> {
    SERVERS.iter().find(|s| s.key == key)
}

/// The bench-only flood server of the standalone-stream check.
pub(crate) const FLOOD: ServerKind = ServerKind {
    key: "flood",
    label: "ours (mcp-flood)",
    description: "`mcp-flood`: our server configured as the echo server's default, HTTP/1.1 \
                  only, with a `flood` tool",
    peer: Peer::Ours,
    family: Family::Sessions,
    program: Program::Bench("mcp-flood"),
    args: &[],
};
