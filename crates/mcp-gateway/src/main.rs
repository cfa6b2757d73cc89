//! `mcp-gateway`: a stdio MCP server served over Streamable HTTP.
//!
//! ```text
//! mcp-gateway serve --addr 127.0.0.1:8080 -- python3 server.py
//! mcp-gateway connect http://127.0.0.1:8080/mcp --header 'X-Api-Key: secret'
//! ```
//!
//! `serve` prints `listening on http://ADDR/mcp` first (port 0 picks a free port; `https://`
//! with `--tls-cert FILE --tls-key FILE`, TLS terminated by rustls), serves MCP
//! at `/mcp`, `/livez` and `/readyz` for probes, and logs on stderr (`RUST_LOG`, `info` by
//! default; `--log-format json` for one object a line, `--request-log` for a line per HTTP
//! request), children's stderr included. SIGTERM or SIGINT shuts it down, children included.
//! With `--redis URL [--node NAME] [--peer-addr IP:PORT] [--advertise IP[:PORT]]` it is one node
//! of several sharing their sessions through Redis: a session's child lives on the node holding
//! the session, the others forward its requests there, and a dead node's sessions are taken over
//! by the next node that needs them, with a new child (what the old one kept in memory is gone).
//! `--auth-issuer ISS --auth-jwks-url URL --auth-audience AUD [--auth-scope SCOPE]
//! [--auth-dpop]` puts MCP authorization in front of every child; `--allowed-host NAME` and
//! `--allowed-origin ORIGIN` answer a public name and pages beyond loopback; `--metrics IP:PORT`
//! serves the metrics in Prometheus's text format (it prints `metrics on http://IP:PORT/metrics`
//! after its first line), and `OTEL_EXPORTER_OTLP_ENDPOINT` sends spans and metrics over OTLP
//! (`mcp_streamable_telemetry`), in `connect` too.
//!
//! `connect` offers the Streamable HTTP server at URL on its stdin and stdout, for a host that
//! runs stdio servers only: either protocol family (found out from the first request), streams
//! resumed, every `--header` sent with each request; with `--oauth [--token-file FILE]` it
//! authorizes through a browser (the URL on stderr) and keeps the tokens. It ends when stdin ends (closing the
//! session with DELETE) or the server goes; it logs on stderr, never on stdout.
//! The library's docs (`mcp_gateway`) say what it does and why each default is what it is.

mod flags;

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser as _;
use clap::builder::BoolishValueParser;
use mcp_gateway::{
    Command, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CHILDREN, DEFAULT_MAX_MESSAGE_SIZE,
    DEFAULT_POOL_SIZE, DEFAULT_REQUEST_TIMEOUT, DEFAULT_STOP_GRACE, Gateway, Options, TokenFile,
};
use mcp_streamable_client::{Client, Telemetry as ClientTelemetry};
use mcp_streamable_oauth::{LoopbackRedirect, OAuth};
use mcp_streamable_redis::RedisBackend;
use mcp_streamable_server::serve::{self as http, terminated};
use mcp_streamable_server::{Config, InMemoryEventStore, Telemetry};
use mcp_streamable_telemetry::{Logs, Prometheus};
use mcp_transport::Transport as _;
use mcp_transport::stdio::Stdio;

/// The `service.name` of the gateway's telemetry, unless `OTEL_SERVICE_NAME` says otherwise.
const SERVICE_NAME: &str = "mcp-gateway";

/// Where the gateway listens unless told: loopback, so that trying it exposes nothing.
const ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// A gateway between stdio MCP servers and Streamable HTTP. Every flag can also be set by the
/// environment variable shown beside it, a flag given on the command line winning.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-gateway", version)]
struct Cli {
    #[command(subcommand)]
    direction: Direction,
}

#[derive(Debug, clap::Subcommand)]
// Parsed once, at start: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Direction {
    /// Serves a stdio MCP server over Streamable HTTP: one child per session (started on
    /// `initialize`, stopped when the session ends), a warm pool for per-request (2026-07-28)
    /// clients. A child that dies ends its session; there is no silent restart.
    Serve(ServeArgs),
    /// Offers a Streamable HTTP server on stdin and stdout, for hosts that run stdio servers
    /// only.
    Connect(ConnectArgs),
}

#[derive(Debug, clap::Args)]
struct ConnectArgs {
    /// The server's MCP endpoint, `http://` or `https://`.
    #[arg(env = "MCP_URL")]
    url: String,
    #[command(flatten)]
    logs: Logs,
    /// A header sent with every request, `NAME: VALUE` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = header)]
    headers: Vec<(String, String)>,
    /// Reach a protected server as an OAuth client: on its first 401, discover its
    /// authorization server, register, and print on stderr the URL to open in a browser; the
    /// redirect comes back to a loopback port of this process.
    #[arg(long, env = "MCP_OAUTH", value_parser = BoolishValueParser::new())]
    oauth: bool,
    /// With `--oauth`: the file the tokens and the client registration are kept in (created
    /// with mode 0600), so that the next run needs no browser. Without it they are forgotten
    /// at exit.
    #[arg(long, env = "MCP_TOKEN_FILE", value_name = "FILE", requires = "oauth")]
    token_file: Option<std::path::PathBuf>,
}

fn header(value: &str) -> Result<(String, String), String> {
    let (name, value) = value.split_once(':').ok_or("NAME: VALUE")?;
    Ok((name.trim().to_owned(), value.trim().to_owned()))
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Where to listen; port 0 picks a free one.
    #[arg(long, env = "MCP_ADDR", default_value_t = ADDR)]
    addr: SocketAddr,
    /// Sessions, so children of sessions, at most.
    #[arg(long, env = "MCP_MAX_SESSIONS", default_value_t = DEFAULT_MAX_CHILDREN)]
    max_sessions: usize,
    /// Seconds a session may stay idle before it ends and its child is stopped [default: 600].
    #[arg(long, env = "MCP_IDLE_TIMEOUT", value_name = "SECS", value_parser = seconds)]
    idle_timeout: Option<Duration>,
    /// Warm children serving per-request (2026-07-28) clients.
    #[arg(long, env = "MCP_POOL_SIZE", default_value_t = DEFAULT_POOL_SIZE)]
    pool_size: usize,
    /// Seconds a request waits for its child's answer before it gets an error [default: 300].
    #[arg(long, env = "MCP_REQUEST_TIMEOUT", value_name = "SECS", value_parser = seconds)]
    request_timeout: Option<Duration>,
    /// The longest line a child may write on stdout, in bytes; a longer one ends its session.
    #[arg(long, env = "MCP_MAX_MESSAGE_SIZE", default_value_t = DEFAULT_MAX_MESSAGE_SIZE)]
    max_message_size: usize,
    /// Seconds a child has to exit after SIGTERM before its process group is killed
    /// [default: 5].
    #[arg(long, env = "MCP_STOP_GRACE", value_name = "SECS", value_parser = seconds)]
    stop_grace: Option<Duration>,
    /// Streams not resumable: no event store (by default a client that lost a stream gets
    /// what it missed, from memory, 1 MiB per session at most).
    #[arg(long, env = "MCP_NO_EVENT_STORE", value_parser = BoolishValueParser::new())]
    no_event_store: bool,
    #[command(flatten)]
    nodes: NodeArgs,
    #[command(flatten)]
    allowed: flags::Allowed,
    #[command(flatten)]
    auth: flags::Auth,
    #[command(flatten)]
    telemetry: flags::Metrics,
    #[command(flatten)]
    logs: Logs,
    /// Terminates TLS with this certificate chain (PEM), serving `https://` with HTTP/2 and
    /// HTTP/1.1 by ALPN; with `--tls-key`.
    #[arg(long, env = "MCP_TLS_CERT", value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, env = "MCP_TLS_KEY", value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// The stdio MCP server to run, after `--`: its program and arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Why `--redis` and `--no-event-store` do not go together.
const NO_STORE_WITH_REDIS: &str =
    "--redis shares sessions and their streams: it does not go with --no-event-store";

/// `--redis URL [--node NAME] [--peer-addr IP:PORT] [--advertise IP[:PORT]]`: one node of several
/// sharing their sessions through Redis.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Several nodes")]
struct NodeArgs {
    /// Makes this gateway one node of several sharing their sessions (and streams) through the
    /// Redis at URL: a session's child lives on the node holding it, the others forward to it,
    /// and a dead node's sessions are taken over, each with a new child.
    #[arg(long = "redis", env = "MCP_REDIS", value_name = "URL")]
    url: Option<String>,
    /// The node's name, unique among the nodes (a random UUID by default).
    #[arg(long, env = "MCP_NODE", value_name = "NAME", requires = "url")]
    node: Option<String>,
    /// Where to listen for the other nodes (a free loopback port by default: nodes on one host).
    #[arg(long, env = "MCP_PEER_ADDR", value_name = "IP:PORT", requires = "url")]
    peer_addr: Option<SocketAddr>,
    /// The address the other nodes are told to reach this one at, when not `--peer-addr`; an IP
    /// alone (a pod's, of either family) is reached on the port `--peer-addr` binds.
    #[arg(long, env = "MCP_ADVERTISE", value_name = "IP[:PORT]", requires = "url",
          value_parser = mcp_streamable_redis::parse_advertised)]
    advertise: Option<SocketAddr>,
}

impl NodeArgs {
    /// With `--redis`, connects to Redis, joins the nodes and gives `config` their cluster (whose
    /// event store and session store replace any others), a session's keys living as long as
    /// its idle timeout; without it, `config` as it is.
    async fn apply(
        self,
        config: Config,
        idle_timeout: Duration,
    ) -> Result<Config, Box<dyn std::error::Error>> {
        let Some(url) = self.url else {
            return Ok(config);
        };
        let mut options = mcp_streamable_redis::Options::default().session_expiry(idle_timeout);
        if let Some(node) = self.node {
            options = options.node(node);
        }
        if let Some(addr) = self.peer_addr {
            options = options.peer_addr(addr);
        }
        if let Some(addr) = self.advertise {
            options = options.advertise(addr);
        }
        let backend = RedisBackend::connect(&url, options)
            .await
            .map_err(|e| format!("connecting to Redis at {url}: {e}"))?;
        tracing::info!(
            node = %backend.node(),
            "one node of the sessions in Redis at {url}, reached by the other nodes at {} \
             (listening for them on {})",
            backend.address(),
            backend.peer_addr()
        );
        Ok(config.cluster(backend.cluster()))
    }
}

fn seconds(value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "seconds, above 0".to_owned())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.direction {
        Direction::Serve(args) => args.logs.init(),
        Direction::Connect(args) => args.logs.init(),
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-gateway: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ran = match cli.direction {
        Direction::Serve(args) => runtime.block_on(serve(args)),
        Direction::Connect(args) => runtime.block_on(connect(args)),
    };
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-gateway: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn connect(args: ConnectArgs) -> Result<(), Box<dyn std::error::Error>> {
    // OTLP only, when OTEL_EXPORTER_OTLP_ENDPOINT says (stdout is the host's); before the
    // client's builder, which takes the global providers when it is made.
    let installed = mcp_streamable_telemetry::install(SERVICE_NAME, None)?;
    let mut builder = Client::builder(&args.url);
    if installed.is_empty() {
        // Nothing to record into: the client skips the work recording takes.
        builder = builder.telemetry(ClientTelemetry::off());
    }
    for (name, value) in args.headers {
        builder = builder.header(name, value);
    }
    if args.oauth {
        builder = builder.auth(oauth(&args.url, args.token_file).await?);
    }
    let remote = builder.build()?.connect().await?;
    let local = Stdio::new().connect().await?;
    let bridged = mcp_gateway::bridge(local, remote).await;
    installed.shutdown().await;
    Ok(bridged?)
}

/// The OAuth client of `connect --oauth`: the authorization code through a loopback redirect,
/// whose URL the user is shown on stderr (stdout is the host's).
async fn oauth(
    url: &str,
    token_file: Option<std::path::PathBuf>,
) -> Result<OAuth, Box<dyn std::error::Error>> {
    let browser = LoopbackRedirect::bind(|url| eprintln!("mcp-gateway: open {url} to authorize"));
    let mut builder = OAuth::builder(url)
        .authorization_code(browser.await?)
        .client_name("mcp-gateway");
    if let Some(path) = token_file {
        builder = builder.store(Arc::new(TokenFile::new(path)));
    }
    Ok(builder.build()?)
}

async fn serve(args: ServeArgs) -> Result<(), Box<dyn std::error::Error>> {
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let command = Command::new(program).args(rest);
    let options = Options::default()
        .pool_size(args.pool_size)
        .request_timeout(args.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT))
        .max_message_size(args.max_message_size)
        .stop_grace(args.stop_grace.unwrap_or(DEFAULT_STOP_GRACE));
    if args.nodes.url.is_some() && args.no_event_store {
        // The cluster's event store would silently replace "none".
        return Err(NO_STORE_WITH_REDIS.into());
    }
    let idle_timeout = args.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT);
    let mut config = Config::default()
        .max_sessions(args.max_sessions)
        .idle_timeout(idle_timeout);
    if !args.no_event_store {
        config = config.event_store(InMemoryEventStore::default());
    }
    // After the in-memory store, which Redis's replaces.
    config = args.nodes.apply(config, idle_timeout).await?;
    config = args.allowed.apply(config);
    config = args.auth.apply(config)?;
    let mut serving = http::Options::default()
        .path("/mcp")
        .health_paths("/livez", "/readyz");
    let scheme = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let tls = http::Tls::from_pem_files(cert, key)
                .map_err(|e| format!("the TLS certificate or key: {e}"))?;
            serving = serving.tls(tls);
            "https"
        }
        _ => "http",
    };
    // Before the service, which takes the global providers when it is built.
    let prometheus = args.telemetry.metrics.map(|_| Prometheus::default());
    let installed = mcp_streamable_telemetry::install(SERVICE_NAME, prometheus.as_ref())?;
    if installed.is_empty() {
        // Nothing to record into: the server skips the work recording takes.
        config = config.telemetry(Telemetry::off());
    }
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    println!("listening on {scheme}://{}/mcp", listener.local_addr()?);
    if let (Some(prometheus), Some(addr)) = (prometheus, args.telemetry.metrics) {
        let bound = prometheus.serve(addr).await?;
        println!(
            "metrics on http://{bound}{}",
            mcp_streamable_telemetry::PATH
        );
    }
    let gateway = Gateway::new(command, options);
    let service = gateway.service(config);
    serving.serve(listener, service, terminated()).await;
    tracing::info!(
        children = gateway.children(),
        "shutting down: stopping children"
    );
    gateway.stop().await;
    installed.shutdown().await;
    Ok(())
}
