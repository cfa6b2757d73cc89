//! A small but real MCP server over the Streamable HTTP transport, for trying the transport and
//! for the interop suites.
//!
//! ```text
//! cargo run --example echo_server -- --addr 127.0.0.1:8080 [--json-response] [--stateless] [--no-event-store]
//!     [--allowed-host NAME]... [--allowed-origin ORIGIN]...
//!     [--auth-issuer ISS --auth-jwks-url URL --auth-audience AUD [--auth-scope SCOPE] [--auth-dpop]]
//!     [--redis redis://127.0.0.1:6379/ [--node NAME] [--peer-addr IP:PORT] [--advertise IP[:PORT]]
//!     [--resume-window SECS]] [--idle-timeout SECS] [--executions-log PATH]
//!     [--metrics IP:PORT] [--log-format plain|json] [--request-log]
//! MCP_ADDR=127.0.0.1:8080 MCP_REDIS=redis://127.0.0.1:6379/ cargo run --example echo_server
//! ```
//!
//! Every flag can be set by an environment variable instead, `MCP_` and the flag's name in
//! upper snake case (`--peer-addr`: `MCP_PEER_ADDR`); `--help` lists them.
//!
//! It prints `listening on http://ADDR/mcp` first (port 0 picks a free port) and serves MCP at
//! `/mcp`, both families on one endpoint: sessions through `initialize` (2025-03-26,
//! 2025-06-18, 2025-11-25) with `ping` and `logging/setLevel`, and the per-request protocol of
//! 2026-07-28 (each request carrying its `_meta`, each result naming the server in its own
//! `_meta`) with `server/discover`; `tools/list` and `tools/call` in both, with tools that
//! exercise every path of the transport:
//!
//! - `echo {text}`: returns the text;
//! - `progress {steps, delay_ms}`: with `_meta.progressToken`, sends `steps` progress
//!   notifications on the request's stream, then returns "done";
//! - `sleep {ms}`: returns after `ms` milliseconds;
//! - `ping_client {}`: sends a `ping` request to the client on the request's stream, waits for
//!   the answer, returns "pong" (sessions only: a 2026-07-28 server asks nothing of its
//!   clients, and the tool answers with the transport's refusal);
//! - `broadcast {text, level}`: sends a `notifications/message` (at `level`, `info` unless
//!   given) unrelated to any request (it travels on the standalone GET stream), returns "sent",
//!   or "filtered" when the level is below the one the session set with `logging/setLevel`
//!   (sessions only, likewise);
//! - `count {key, delay_ms}`: returns the id of the process that ran it after `delay_ms`, and
//!   with `--executions-log PATH` appends `<key> <pid>` to `PATH` as it starts (the tests of
//!   several nodes count how often a call ran).
//!
//! And for 2026-07-28 clients only:
//!
//! - `subscriptions/listen`: listen streams served by the server crate's `Subscriptions`,
//!   which hear the changes announced on every node (Redis's bus with `--redis`);
//! - `notify_change {list | uri}`: announces that the `tools`, `prompts` or `resources` list
//!   changed, or that resource `uri` was updated, to every listen stream of every node;
//! - `confirm {text}`: answers with an input-required result (an elicitation) whose
//!   `requestState` is the text sealed by `StateSealer`, and the retry with the text, if the
//!   state holds (a tampered, expired or foreign one is -32602): `--state-key HEX` gives every
//!   node the same key;
//! - `lookup {region, key}`: declares both arguments `x-mcp-header`, and the server
//!   (`Config::tool_headers`) refuses a call whose `Mcp-Param-Region`/`Mcp-Param-Key` headers do
//!   not match them.
//!
//! The application is `support/echo_app.rs`, which `tests/it` also drives.
//!
//! With the `--auth-*` flags the server is protected (MCP authorization): every request needs a
//! JWT access token issued by `ISS` (compared with `iss` exactly), signed with a key of the
//! set at `URL` (https, or http to the loopback), for the audience `AUD` (the resource: the
//! endpoint's URL as clients use it, `http://127.0.0.1:PORT/mcp`), and carrying `SCOPE` when
//! given. Refusals are 401 with a challenge naming the Protected Resource Metadata, served at
//! `/.well-known/oauth-protected-resource/mcp` (and the root form) with `ISS` as its
//! authorization server; 403 for a token without the scope. With `--auth-dpop` it takes
//! DPoP-bound tokens too (RFC 9449), each request with a proof for `AUD`'s origin and path,
//! and refuses a token bound to a key without one. Without the flags it runs open.
//!
//! With `--redis URL` the server is one node of several sharing their sessions through the
//! Redis at `URL` (`mcp_streamable_http::redis`): the event store, the session store and the
//! cluster are Redis's, so any number of these processes behind a load balancer without
//! session affinity serve one set of sessions: a request reaching a node that does not hold its
//! session goes to the holder over HTTP/2, and a killed node's sessions go on through the
//! others. `--node NAME` names the node (unique among them; a random UUID by default; a node
//! started again under its name is a new incarnation of it). `--peer-addr IP:PORT` is where it
//! listens for the other nodes (a free loopback port by default: nodes on one host), and
//! `--advertise IP[:PORT]` the address they are told to reach it at, when not that one (an IP
//! alone on the port it listens on);
//! `--resume-window SECS` how long a finished stream's events are kept (60 s by default). The idle
//! timeout (`--idle-timeout`, 30 minutes by default) is both the server's and the lifetime of a
//! session's keys in Redis. Without `--redis` the stores are in memory and nothing of this is
//! in play.
//!
//! It answers requests whose `Host` is a loopback name, and those from pages served from
//! loopback (DNS rebinding protection): behind a reverse proxy or under a public name,
//! `--allowed-host NAME` adds names to answer (repeatable), and `--allowed-origin ORIGIN` lists
//! the origins of the browser pages allowed in place of loopback ones.
//!
//! Streams are resumable by default (an in-memory event store). SIGINT (Ctrl-C) and SIGTERM
//! shut down gracefully (with `--redis`, the node's sessions go on through the others);
//! `/livez` and `/readyz` answer liveness and readiness probes (503 once shutdown begins, or
//! while the node does not hold its lease).
//!
//! Observability: the server records OpenTelemetry spans and metrics (the server's `otel`
//! feature). `--metrics IP:PORT` serves the metrics in Prometheus's text format at
//! `http://IP:PORT/metrics` (it prints `metrics on http://IP:PORT/metrics` after the first
//! line); `OTEL_EXPORTER_OTLP_ENDPOINT` (e.g. `http://127.0.0.1:4318`) sends spans and metrics
//! over OTLP/HTTP, and makes a `traceparent` in a request's `_meta` the parent of its span.
//! With neither, it records nothing (`Telemetry::off()`), and saves the work.
//! Logs go to stderr, `info` and above unless `RUST_LOG` says otherwise (`RUST_LOG=debug`
//! shows what the transport does), as plain text or JSON lines (`--log-format`), without
//! colour codes unless stderr is a terminal; `--request-log` adds a line for each HTTP request.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Parser as _;
use clap::builder::BoolishValueParser;
use mcp_streamable_http::auth::{Guard, dpop, jwt::JwtVerifier};
use mcp_streamable_http::redis::RedisBackend;
use mcp_streamable_http::server::{
    Config, DEFAULT_IDLE_TIMEOUT, InMemoryBus, InMemoryEventStore, StateSealer,
    StreamableHttpService, Telemetry,
};
use mcp_streamable_telemetry::{Logs, Prometheus};
use support::cli::Allowed;
use support::{echo_app, echo_modern, serve};

/// Where the server listens unless told: loopback, so that trying it exposes nothing, on the
/// port the README's commands use.
const ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// A small but real MCP server over the Streamable HTTP transport (see the example's docs for
/// its tools). Every flag can also be set by the environment variable shown beside it, a flag
/// given on the command line winning; a switch's variable takes `true` or `false` (or `1`,
/// `0`, `yes`, `no`, `on`, `off`).
#[derive(Debug, clap::Parser)]
#[command(name = "echo_server")]
struct Args {
    /// Where to listen; port 0 picks a free one.
    #[arg(long, env = "MCP_ADDR", default_value_t = ADDR)]
    addr: SocketAddr,
    /// Replies in `application/json` rather than SSE streams.
    #[arg(long, env = "MCP_JSON_RESPONSE", value_parser = BoolishValueParser::new())]
    json_response: bool,
    /// No sessions: each POST served on its own.
    #[arg(long, env = "MCP_STATELESS", value_parser = BoolishValueParser::new())]
    stateless: bool,
    /// Streams not resumable: no event store.
    #[arg(long, env = "MCP_NO_EVENT_STORE", value_parser = BoolishValueParser::new())]
    no_event_store: bool,
    /// How long a session may stay idle before it ends, in seconds (30 minutes by default); on
    /// Redis, the lifetime of a session's keys too.
    #[arg(long, env = "MCP_IDLE_TIMEOUT", value_name = "SECS", value_parser = seconds)]
    idle_timeout: Option<Duration>,
    /// Appends `<key> <pid>` to PATH whenever the `count` tool starts.
    #[arg(long, env = "MCP_EXECUTIONS_LOG", value_name = "PATH")]
    executions_log: Option<PathBuf>,
    /// The key `confirm` seals its `requestState` with, 64 hexadecimal digits: one key for
    /// every node, so that a retry is verified on whichever it lands (a random one by default,
    /// which only this process knows).
    #[arg(long, env = "MCP_STATE_KEY", value_name = "HEX", value_parser = support::cli::state_key)]
    state_key: Option<[u8; 32]>,
    /// Serves the server's metrics in Prometheus's text format at `http://IP:PORT/metrics`
    /// (port 0 picks a free one).
    #[arg(long, env = "MCP_METRICS", value_name = "IP:PORT")]
    metrics: Option<SocketAddr>,
    #[command(flatten)]
    logs: Logs,
    #[command(flatten)]
    allowed: Allowed,
    #[command(flatten)]
    auth: AuthOptions,
    #[command(flatten)]
    redis: RedisOptions,
}

/// `--redis URL [--node NAME] [--peer-addr ADDR]`: one node of several, sharing their sessions
/// through Redis.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Several nodes")]
struct RedisOptions {
    /// Makes this server one node of several sharing their sessions through the Redis at URL.
    #[arg(long = "redis", env = "MCP_REDIS", value_name = "URL")]
    url: Option<String>,
    /// The node's name, unique among the nodes (a random UUID by default).
    #[arg(long, env = "MCP_NODE", value_name = "NAME")]
    node: Option<String>,
    /// Where to listen for the other nodes (a free loopback port by default).
    #[arg(long, env = "MCP_PEER_ADDR", value_name = "IP:PORT")]
    peer_addr: Option<SocketAddr>,
    /// The address the other nodes are told to reach this one at, when not `--peer-addr`; an IP
    /// alone (a pod's, of either family) is reached on the port `--peer-addr` binds.
    #[arg(long, env = "MCP_ADVERTISE", value_name = "IP[:PORT]",
          value_parser = mcp_streamable_http::redis::parse_advertised)]
    advertise: Option<SocketAddr>,
    /// How long a finished stream's events are kept, in seconds (60 by default).
    #[arg(long, env = "MCP_RESUME_WINDOW", value_name = "SECS", value_parser = seconds)]
    resume_window: Option<Duration>,
}

impl RedisOptions {
    /// Connects to Redis and gives `config` its three seams, and the listen streams their bus,
    /// or returns `config` as it is (and a bus of this process) when `--redis` was not given.
    async fn apply(
        self,
        config: Config,
        idle_timeout: Duration,
        sealer: StateSealer,
    ) -> anyhow::Result<Config> {
        let Some(url) = self.url else {
            if self.node.is_some()
                || self.peer_addr.is_some()
                || self.advertise.is_some()
                || self.resume_window.is_some()
            {
                bail!(
                    "--node, --peer-addr, --advertise and --resume-window are of a node of \
                     several: they go with --redis"
                );
            }
            echo_modern::configure(InMemoryBus::default(), sealer);
            return Ok(config);
        };
        let mut options =
            mcp_streamable_http::redis::Options::default().session_expiry(idle_timeout);
        if let Some(node) = self.node {
            options = options.node(node);
        }
        if let Some(addr) = self.peer_addr {
            options = options.peer_addr(addr);
        }
        if let Some(addr) = self.advertise {
            options = options.advertise(addr);
        }
        if let Some(window) = self.resume_window {
            options = options.resume_window(window);
        }
        let backend = RedisBackend::connect(&url, options)
            .await
            .with_context(|| format!("connecting to Redis at {url}"))?;
        tracing::info!(
            node = %backend.node(),
            "one node of the sessions in Redis at {url}, reached by the other nodes at {} \
             (listening for them on {})",
            backend.address(),
            backend.peer_addr()
        );
        echo_modern::configure(backend.notification_bus(), sealer);
        Ok(config.cluster(backend.cluster()))
    }
}

/// The `--auth-*` flags: all of issuer, key set and audience, or none.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Authorization")]
struct AuthOptions {
    /// Protects the server: tokens must be JWTs issued by ISS (compared with `iss` exactly).
    #[arg(long = "auth-issuer", env = "MCP_AUTH_ISSUER", value_name = "ISS")]
    issuer: Option<String>,
    /// The key set the tokens are signed with (https, or http to the loopback).
    #[arg(long = "auth-jwks-url", env = "MCP_AUTH_JWKS_URL", value_name = "URL")]
    jwks_url: Option<String>,
    /// The audience the tokens must name: the endpoint's URL as clients use it.
    #[arg(long = "auth-audience", env = "MCP_AUTH_AUDIENCE", value_name = "AUD")]
    audience: Option<String>,
    /// A scope every token must carry.
    #[arg(long = "auth-scope", env = "MCP_AUTH_SCOPE", value_name = "SCOPE")]
    scope: Option<String>,
    /// Takes DPoP-bound tokens too (RFC 9449), each request with its proof.
    #[arg(long = "auth-dpop", env = "MCP_AUTH_DPOP", value_parser = BoolishValueParser::new())]
    dpop: bool,
}

impl AuthOptions {
    /// The guard the flags describe, or `None` when none was given.
    fn guard(self) -> anyhow::Result<Option<Guard>> {
        let (issuer, jwks_url, audience) = match (self.issuer, self.jwks_url, self.audience) {
            (None, None, None) if self.scope.is_none() && !self.dpop => return Ok(None),
            (Some(issuer), Some(jwks_url), Some(audience)) => (issuer, jwks_url, audience),
            _ => bail!("--auth-issuer, --auth-jwks-url and --auth-audience go together"),
        };
        let verifier = JwtVerifier::builder(&issuer, jwks_url, &audience)
            .build()
            .context("bad --auth-jwks-url")?;
        let mut guard = Guard::builder(audience)
            .authorization_server(issuer)
            .required_scopes(self.scope);
        if self.dpop {
            guard = guard.dpop(dpop::Config::default());
        }
        let guard = guard.build(verifier).context("bad --auth-* settings")?;
        Ok(Some(guard))
    }
}

/// Seconds, above 0: `--idle-timeout` and `--resume-window`.
fn seconds(value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "seconds, above 0".to_owned())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.logs.init();
    if args.redis.url.is_some() && (args.stateless || args.no_event_store) {
        bail!(
            "--redis shares sessions and their streams: it goes with neither --stateless nor \
             --no-event-store"
        );
    }
    if let Some(path) = args.executions_log {
        echo_app::keep_executions_log(path);
    }
    let idle_timeout = args.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT);
    let mut config = Config::default()
        .json_response(args.json_response)
        .idle_timeout(idle_timeout);
    if args.stateless {
        config = config.stateless();
    }
    if !args.no_event_store && !args.stateless {
        config = config.event_store(InMemoryEventStore::default());
    }
    config = args.allowed.apply(config);
    let key = match args.state_key {
        Some(key) => key,
        None if args.redis.url.is_some() => {
            tracing::warn!(
                "no --state-key: confirm's states are sealed with a key of this node's own, which \
                 the other nodes refuse"
            );
            echo_modern::random_key()
        }
        None => echo_modern::random_key(),
    };
    let sealer = StateSealer::new("k1", &key)?;
    // After the in-memory store, which Redis's replaces.
    config = args.redis.apply(config, idle_timeout, sealer).await?;
    // The server checks the Mcp-Param-* headers of calls against the tools' declarations.
    config = config.tool_headers(echo_modern::tool_headers(&echo_app::tools(true)));
    if let Some(guard) = args.auth.guard()? {
        tracing::info!(
            "protected: tokens from {}",
            guard.metadata().authorization_servers[0]
        );
        config = config.authorization(guard);
    }
    // Before the service, which takes the global providers when it is built.
    let prometheus = args.metrics.map(|_| Prometheus::default());
    let installed = mcp_streamable_telemetry::install("echo_server", prometheus.as_ref())?;
    if installed.is_empty() {
        // Nothing to record into: the server skips the work recording takes.
        config = config.telemetry(Telemetry::off());
    }
    let service = StreamableHttpService::new(config, echo_app::session);

    let listener = serve::listen(args.addr).await?;
    if let (Some(prometheus), Some(addr)) = (prometheus, args.metrics) {
        let bound = prometheus.serve(addr).await?;
        println!(
            "metrics on http://{bound}{}",
            mcp_streamable_telemetry::PATH
        );
    }
    let served = serve::until_terminated(listener, service).await;
    installed.shutdown().await;
    served
}
