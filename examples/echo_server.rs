//! A small but real MCP server over the Streamable HTTP transport, for trying the transport and
//! for the interop suites.
//!
//! ```text
//! cargo run --example echo_server -- --addr 127.0.0.1:8080 [--json-response] [--stateless] [--no-event-store]
//!     [--auth-issuer ISS --auth-jwks-url URL --auth-audience AUD [--auth-scope SCOPE] [--auth-dpop]]
//!     [--redis redis://127.0.0.1:6379/ [--node NAME] [--peer-addr IP:PORT] [--advertise IP:PORT]
//!     [--resume-window SECS]] [--idle-timeout SECS] [--executions-log PATH]
//! ```
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
//! `--advertise IP:PORT` the address they are told to reach it at, when not that one;
//! `--resume-window SECS` how long a finished stream's events are kept (60 s by default). The idle
//! timeout (`--idle-timeout`, 30 minutes by default) is both the server's and the lifetime of a
//! session's keys in Redis. Without `--redis` the stores are in memory and nothing of this is
//! in play.
//!
//! Streams are resumable by default (an in-memory event store). Ctrl-C shuts down gracefully.
//! `RUST_LOG=debug` shows what the transport does.

#[path = "support/echo_app.rs"]
mod echo_app;
#[path = "support/serve.rs"]
mod serve;

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_streamable_http::auth::{Guard, dpop, jwt::JwtVerifier};
use mcp_streamable_http::redis::RedisBackend;
use mcp_streamable_http::server::{
    Config, DEFAULT_IDLE_TIMEOUT, InMemoryEventStore, StreamableHttpService,
};

struct Options {
    addr: SocketAddr,
    json_response: bool,
    stateless: bool,
    event_store: bool,
    idle_timeout: Duration,
    auth: AuthOptions,
    redis: RedisOptions,
    executions_log: Option<std::path::PathBuf>,
}

/// `--redis URL [--node NAME] [--peer-addr ADDR]`: one node of several, sharing their sessions
/// through Redis.
#[derive(Default)]
struct RedisOptions {
    url: Option<String>,
    node: Option<String>,
    peer_addr: Option<SocketAddr>,
    advertise: Option<SocketAddr>,
    resume_window: Option<Duration>,
}

impl RedisOptions {
    /// Connects to Redis and gives `config` its three seams, or returns `config` as it is when
    /// `--redis` was not given.
    async fn apply(self, config: Config, idle_timeout: Duration) -> anyhow::Result<Config> {
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
        eprintln!(
            "node {} of the sessions in Redis at {url}, reached by the other nodes at {}",
            backend.node(),
            backend.address()
        );
        Ok(config.cluster(backend.cluster()))
    }
}

/// The `--auth-*` flags: all of issuer, key set and audience, or none.
#[derive(Default)]
struct AuthOptions {
    issuer: Option<String>,
    jwks_url: Option<String>,
    audience: Option<String>,
    scope: Option<String>,
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

fn parse_args() -> anyhow::Result<Options> {
    let mut options = Options {
        addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
        json_response: false,
        stateless: false,
        event_store: true,
        idle_timeout: DEFAULT_IDLE_TIMEOUT,
        auth: AuthOptions::default(),
        redis: RedisOptions::default(),
        executions_log: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => {
                let value = args
                    .next()
                    .context("--addr needs a value, e.g. 127.0.0.1:0")?;
                options.addr = value
                    .parse()
                    .with_context(|| format!("bad --addr {value:?}"))?;
            }
            "--json-response" => options.json_response = true,
            "--stateless" => options.stateless = true,
            "--no-event-store" => options.event_store = false,
            "--auth-issuer" => options.auth.issuer = Some(value(&mut args, &arg)?),
            "--auth-jwks-url" => options.auth.jwks_url = Some(value(&mut args, &arg)?),
            "--auth-audience" => options.auth.audience = Some(value(&mut args, &arg)?),
            "--auth-scope" => options.auth.scope = Some(value(&mut args, &arg)?),
            "--auth-dpop" => options.auth.dpop = true,
            "--redis" => options.redis.url = Some(value(&mut args, &arg)?),
            "--node" => options.redis.node = Some(value(&mut args, &arg)?),
            "--peer-addr" => options.redis.peer_addr = Some(address(&mut args, &arg)?),
            "--advertise" => options.redis.advertise = Some(address(&mut args, &arg)?),
            "--executions-log" => options.executions_log = Some(value(&mut args, &arg)?.into()),
            "--idle-timeout" => options.idle_timeout = seconds(&mut args, &arg)?,
            "--resume-window" => options.redis.resume_window = Some(seconds(&mut args, &arg)?),
            "-h" | "--help" => {
                println!(
                    "usage: echo_server [--addr IP:PORT] [--json-response] [--stateless] [--no-event-store] \
                     [--auth-issuer ISS --auth-jwks-url URL --auth-audience AUD [--auth-scope SCOPE] [--auth-dpop]] \
                     [--redis URL [--node NAME] [--peer-addr IP:PORT] [--advertise IP:PORT] [--resume-window SECS]] \
                     [--idle-timeout SECS] [--executions-log PATH]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    if options.redis.url.is_some() && (options.stateless || !options.event_store) {
        bail!(
            "--redis shares sessions and their streams: it goes with neither --stateless nor \
             --no-event-store"
        );
    }
    Ok(options)
}

/// The seconds after flag `name`, above 0.
fn seconds(args: &mut impl Iterator<Item = String>, name: &str) -> anyhow::Result<Duration> {
    let secs = value(args, name)?;
    let secs: f64 = secs
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0)
        .with_context(|| format!("bad {name} {secs:?}: seconds, above 0"))?;
    Ok(Duration::from_secs_f64(secs))
}

/// The address after flag `name`.
fn address(args: &mut impl Iterator<Item = String>, name: &str) -> anyhow::Result<SocketAddr> {
    let addr = value(args, name)?;
    addr.parse()
        .with_context(|| format!("bad {name} {addr:?}: IP:PORT"))
}

/// The value after flag `name`.
fn value(args: &mut impl Iterator<Item = String>, name: &str) -> anyhow::Result<String> {
    args.next().with_context(|| format!("{name} needs a value"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let options = parse_args()?;
    if let Some(path) = &options.executions_log {
        echo_app::keep_executions_log(path.clone());
    }
    let mut config = Config::default()
        .json_response(options.json_response)
        .idle_timeout(options.idle_timeout);
    if options.stateless {
        config = config.stateless();
    }
    if options.event_store && !options.stateless {
        config = config.event_store(InMemoryEventStore::default());
    }
    // After the in-memory store, which Redis's replaces.
    config = options.redis.apply(config, options.idle_timeout).await?;
    if let Some(guard) = options.auth.guard()? {
        eprintln!(
            "protected: tokens from {}",
            guard.metadata().authorization_servers[0]
        );
        config = config.authorization(guard);
    }
    let service = StreamableHttpService::new(config, echo_app::session);

    serve::serve(options.addr, service).await
}
