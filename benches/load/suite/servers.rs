//! Starting the servers under test and the load generator, each pinned to its own core when
//! the machine allows.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, bail};
use serde::de::DeserializeOwned;

use super::otlp_sink::{Received, Sink};
use crate::cli;

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
    program: Program,
    args: &'static [&'static str],
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
enum Program {
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
    /// [`METRIC_EXPORT_INTERVAL_MS`].
    Otlp,
}

/// `OTEL_METRIC_EXPORT_INTERVAL` of the row `ours-otlp`, in milliseconds: OpenTelemetry's
/// default is 60 s; at 5 s, each run's window holds a metrics export.
const METRIC_EXPORT_INTERVAL_MS: &str = "5000";

/// Every server the suite knows, in table order; `ours-no-store`, `ours-otel`, `ours-otlp` and
/// the baseline's run only when asked for (the baseline's by default with `--baseline-echo-server`).
/// The
/// `-26` ones are the same programs spoken to the per-request way of 2026-07-28.
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
        program: Program::Otlp,
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
    /// What the load generator is told besides the family's: the protected rows' credentials.
    pub(crate) fn auth_args(&self, launcher: &Launcher) -> Vec<String> {
        match (self.program, &launcher.auth) {
            (Program::Protected { dpop }, Some(auth)) => auth.load_args(dpop),
            _ => Vec::new(),
        }
    }

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

/// Every server listens on a loopback port the OS picks.
const ADDR: [&str; 2] = ["--addr", "127.0.0.1:0"];

/// Where the programs are, and how to pin them.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    /// The `benches` binaries.
    pub(crate) bin_dir: PathBuf,
    /// The echo server example.
    pub(crate) echo_server: PathBuf,
    /// Pin servers to CPU 0 and the load generator to CPU 1.
    pub(crate) pin: bool,
    /// The suite's Redis URL, for the servers on Redis.
    pub(crate) redis: Option<String>,
    /// The suite's authority, for the protected servers.
    pub(crate) auth: Option<super::auth::Authority>,
    /// The echo server of the baseline commit, for the `base` servers.
    pub(crate) baseline: Option<PathBuf>,
}

impl Launcher {
    /// Whether pinning is possible: two cores or more, and `taskset`.
    pub(crate) fn can_pin() -> bool {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        cores >= 2
            && Command::new("taskset")
                .arg("-V")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    }

    /// A command running `program args` on `cpu` (when pinning), with the file descriptor
    /// limit raised to the hard limit (ten thousand idle sessions need as many sockets).
    pub(crate) fn command(&self, cpu: u8, program: &Path, args: &[String]) -> Command {
        let mut command = cli::command("sh");
        command.args([
            "-c",
            r#"ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@""#,
            "sh",
        ]);
        if self.pin {
            command.args(["taskset", "-c", &cpu.to_string()]);
        }
        command.arg(program).args(args);
        command.env_remove("RUST_LOG");
        command
    }

    /// Starts a server and waits for its `listening on URL` line; a server of several nodes
    /// starts each node, then the proxy in front of them.
    pub(crate) fn start(&self, kind: &ServerKind) -> anyhow::Result<Server> {
        let mut args = vec![ADDR[0], ADDR[1]];
        args.extend(kind.args);
        let nodes = match kind.program {
            Program::EchoServer => return self.spawn(kind.key, 0, &self.echo_server, &args),
            Program::Bench(name) => {
                return self.spawn(kind.key, 0, &self.bin_dir.join(name), &args);
            }
            Program::Protected { dpop } => {
                let auth = self
                    .auth
                    .as_ref()
                    .context("no authority for the protected rows")?;
                let extra = auth.server_args(dpop);
                args.extend(extra.iter().map(String::as_str));
                return self.spawn(kind.key, 0, &self.echo_server, &args);
            }
            Program::Baseline { .. } => {
                let baseline = self
                    .baseline
                    .as_ref()
                    .context("no --baseline-echo-server for the baseline's rows")?;
                return self.spawn(kind.key, 0, baseline, &args);
            }
            Program::Otlp => return self.start_exporting(kind, &args),
            Program::RedisNodes { nodes, away } => (nodes, away),
        };
        self.start_nodes(kind, nodes, &args)
    }

    /// Starts an OTLP sink, pinned where the load generator runs, and the echo server with
    /// `args`, exporting its spans and metrics to the sink.
    fn start_exporting(&self, kind: &ServerKind, args: &[&str]) -> anyhow::Result<Server> {
        let sink = Sink::start(self.pin).context("starting the OTLP sink")?;
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.as_str()),
            ("OTEL_METRIC_EXPORT_INTERVAL", METRIC_EXPORT_INTERVAL_MS),
        ];
        let mut server = self.spawn_with_env(kind.key, 0, &self.echo_server, args, &env)?;
        server.sink = Some(sink);
        Ok(server)
    }

    /// Starts `nodes` nodes of the echo server on the suite's Redis with `args`, and, for more
    /// than one, the proxy in front of them.
    fn start_nodes(
        &self,
        kind: &ServerKind,
        (nodes, away): (u8, bool),
        args: &[&str],
    ) -> anyhow::Result<Server> {
        let redis = self
            .redis
            .as_deref()
            .context("no Redis: the suite could not start redis-server")?;
        let mut started: Vec<Server> = Vec::new();
        for n in 1..=nodes {
            let node = format!("suite-{}-{n}-{}", kind.key, std::process::id());
            let mut args = args.to_vec();
            args.extend(["--redis", redis, "--node", &node]);
            let log = format!("{}-{n}", kind.key);
            started.push(self.spawn(&log, 0, &self.echo_server, &args)?);
        }
        let mut first = started.remove(0);
        if started.is_empty() {
            return Ok(first);
        }
        let mut args = Vec::new();
        if away {
            args.push("--away");
        }
        for node in std::iter::once(&first).chain(&started) {
            let addr = node
                .url
                .trim_start_matches("http://")
                .trim_end_matches("/mcp");
            args.extend(["--node", addr]);
        }
        let proxy = self.spawn("proxy", 1, &self.bin_dir.join("mcp-proxy"), &args)?;
        first.url.clone_from(&proxy.url);
        first.side.push(("proxy", proxy.pid));
        first.others.push(proxy);
        for node in started {
            first.pids.push(node.pid);
            first.others.push(node);
        }
        Ok(first)
    }

    /// Starts `program args` on `cpu` and waits for its `listening on URL` line; its stderr
    /// goes to a file named after `log`.
    pub(crate) fn spawn(
        &self,
        log: &str,
        cpu: u8,
        program: &Path,
        args: &[&str],
    ) -> anyhow::Result<Server> {
        self.spawn_with_env(log, cpu, program, args, &[])
    }

    /// [`spawn`](Self::spawn) with the variables `env` set for the program.
    fn spawn_with_env(
        &self,
        log: &str,
        cpu: u8,
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Server> {
        if !program.exists() {
            bail!(
                "{} not found: build it in release first (cargo build --release -p benches \
                 --bins; cargo build --release --example echo_server)",
                program.display()
            );
        }
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        // Whatever a server says on stderr goes to a file: nothing it prints can slow the
        // suite down, and the file is there to read if it fails.
        let log = std::env::temp_dir().join(format!("mcp-load-suite-{log}.log"));
        let stderr =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = self
            .command(cpu, program, &args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "{} did not start: {line:?} (its stderr is in {})",
                program.display(),
                log.display()
            );
        };
        let url = url.to_owned();
        // Whatever else it prints is read and dropped, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let _ = stdout.read_to_end(&mut Vec::new());
        });
        let pid = child.id();
        Ok(Server {
            pids: vec![pid],
            pid,
            child,
            url,
            side: Vec::new(),
            others: Vec::new(),
            sink: None,
        })
    }

    /// Runs the load generator with `args` and reads its `--json` report.
    pub(crate) fn load<R: DeserializeOwned>(&self, args: &[String]) -> anyhow::Result<R> {
        self.generate("mcp-load", args)
    }

    /// Runs `binary` of the `benches` package, pinned where the load generator goes, with
    /// `args` and `--json`, and reads its report.
    pub(crate) fn generate<R: DeserializeOwned>(
        &self,
        binary: &str,
        args: &[String],
    ) -> anyhow::Result<R> {
        let program = self.bin_dir.join(binary);
        let mut args = args.to_vec();
        args.push("--json".to_owned());
        let output = self
            .command(1, &program, &args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", program.display()))?;
        if !output.status.success() {
            bail!(
                "{binary} {} failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        serde_json::from_slice(&output.stdout).with_context(|| {
            format!(
                "{binary} printed something else than its report: {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }
}

/// A running server; stopped (killed) when dropped, with its other nodes and its proxy.
#[derive(Debug)]
pub(crate) struct Server {
    child: Child,
    /// Its (first node's) process id, for `/proc`.
    pub(crate) pid: u32,
    /// Every node's process id: the server's CPU is their sum.
    pub(crate) pids: Vec<u32>,
    /// Processes whose CPU is counted apart (the proxy), by name.
    pub(crate) side: Vec<(&'static str, u32)>,
    /// The MCP endpoint (the proxy's, for several nodes).
    pub(crate) url: String,
    /// The other nodes and the proxy.
    others: Vec<Server>,
    /// The OTLP sink it exports to (`ours-otlp`), stopped after it.
    sink: Option<Sink>,
}

impl Server {
    /// A server started by other means, listening at `url`.
    pub(crate) fn from_child(child: Child, url: String) -> Server {
        let pid = child.id();
        Server {
            child,
            pid,
            pids: vec![pid],
            side: Vec::new(),
            url,
            others: Vec::new(),
            sink: None,
        }
    }

    /// What its OTLP sink has received so far, if it exports to one.
    pub(crate) fn exported(&self) -> Option<Received> {
        self.sink.as_ref().map(Sink::received)
    }

    /// Its exit status, if it has exited.
    pub(crate) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// What `mcp-load --mode idle` is told to open `sessions` idle sessions on this server,
    /// each session's connection closed once it is initialized when `close`.
    pub(crate) fn idle_args(&self, sessions: usize, close: bool) -> Vec<String> {
        let mut args = vec![
            "--url".to_owned(),
            self.url.clone(),
            "--mode".to_owned(),
            "idle".to_owned(),
            "--sessions".to_owned(),
            sessions.to_string(),
            "--server-pid".to_owned(),
            self.pid.to_string(),
        ];
        if close {
            args.push("--close".to_owned());
        }
        args
    }

    /// What `mcp-load` is told of this server's processes: `--server-pid` for each node,
    /// `--side-pid NAME=PID` for the others.
    pub(crate) fn pid_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for pid in &self.pids {
            args.extend(["--server-pid".to_owned(), pid.to_string()]);
        }
        for (name, pid) in &self.side {
            args.extend(["--side-pid".to_owned(), format!("{name}={pid}")]);
        }
        args
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
