//! `mcp-failover`: how long a session's client waits when the node holding the session is
//! killed (`kill -9`), with the echo server's Redis defaults (lease 750 ms, renewed every
//! 250 ms).
//!
//! ```text
//! mcp-failover [--trials 10] [--echo-server PATH] [--redis URL] [--json]
//! ```
//!
//! It starts a `redis-server` of its own (unless given `--redis`) and a node B of the echo
//! server on it (`echo_server --redis URL`); then, in each trial:
//!
//! 1. starts a node A and opens a session on it directly: A, where `initialize` landed, holds
//!    the session (the driver checks that the field `node` of `mcp:{S}` in Redis says so);
//! 2. starts a long `progress` call (`steps` 10,000, `delay_ms` 20, `progressToken` in
//!    `_meta`) through B, which forwards it to A over HTTP/2 and relays A's stream, and waits
//!    for its first progress notification on B's stream;
//! 3. waits a further `(n × 25) mod 250` ms (trial `n`), so that the kills land at phases
//!    spread evenly over A's lease renewals (every 250 ms) rather than always just after one;
//!    kills A with SIGKILL and times until B's stream carries the call's response: the error
//!    with which the node that took the session over answers the requests the dead holder
//!    left unanswered (the progress notifications that arrive first were written before the
//!    kill; they are counted apart);
//! 4. calls `echo` in the session through B (served by the new holder) and deletes it.
//!
//! No proxy: the driver must know which node each request reaches, and a proxy would add
//! nothing to the time measured. It prints the times and their median; `--json`, one object
//! (`FailoverReport` in `report.rs`).

mod http;

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use serde_json::json;

use crate::cli;
use crate::redis::Redis;
use crate::report::FailoverReport;
use crate::stats::median;

/// The renewal period of a node's lease with the defaults (a third of 750 ms), over which the
/// trials spread the moment of the kill.
const RENEWAL: Duration = Duration::from_millis(250);

/// How far apart the kills of consecutive trials fall in the renewal period.
const PHASE_STEP: Duration = Duration::from_millis(25);

/// The most one trial may take: it bounds a broken run, not the measurement.
const TRIAL_LIMIT: Duration = Duration::from_secs(30);

/// How long a session's client waits when the node holding the session is killed.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-failover")]
pub struct Args {
    /// Trials, each killing a fresh holder.
    #[arg(long, default_value_t = 10)]
    pub trials: usize,
    /// The echo server example (by default `examples/echo_server` next to this program).
    #[arg(long, value_name = "PATH")]
    pub echo_server: Option<PathBuf>,
    /// A Redis to use rather than a `redis-server` of its own.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// Prints one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A node of the echo server on Redis; killed (SIGKILL) when dropped.
struct Node {
    child: Child,
    addr: SocketAddr,
    name: String,
}

impl Node {
    fn start(echo_server: &Path, redis: &str, name: &str) -> anyhow::Result<Node> {
        let mut child = cli::command(echo_server)
            .args(["--addr", "127.0.0.1:0", "--redis", redis, "--node", name])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", echo_server.display()))?;
        let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|addr| addr.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("node {name} did not start: {line:?}");
        };
        std::thread::spawn(move || {
            let _ = stdout.read_to_end(&mut Vec::new());
        });
        Ok(Node {
            child,
            addr,
            name: name.to_owned(),
        })
    }

    /// SIGKILL, as `kill -9`; then reaps it.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What one trial measured.
struct Trial {
    failover: Duration,
    progress_after_kill: u32,
    went_on: bool,
}

/// Runs `mcp-failover`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let echo_server = match args.echo_server {
        Some(path) => path,
        None => std::env::current_exe()?
            .parent()
            .context("no directory")?
            .join("examples")
            .join("echo_server"),
    };
    ensure!(
        echo_server.exists(),
        "{} not found: cargo build --release --example echo_server",
        echo_server.display()
    );
    let own_redis = match &args.redis {
        Some(_) => None,
        None => Some(Redis::start()?),
    };
    let url = args
        .redis
        .clone()
        .or_else(|| own_redis.as_ref().map(|r| r.url.clone()))
        .context("a Redis")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let follower = Node::start(&echo_server, &url, "failover-b")?;
    let mut report = FailoverReport {
        trials: args.trials,
        ..FailoverReport::default()
    };
    for n in 1..=args.trials {
        let result =
            Node::start(&echo_server, &url, &format!("failover-a{n}")).and_then(|holder| {
                runtime.block_on(async {
                    let phase = phase(n);
                    tokio::time::timeout(TRIAL_LIMIT, trial(holder, &follower, &url, phase))
                        .await
                        .context("the trial took too long")?
                })
            });
        match result {
            Ok(trial) => {
                let ms = trial.failover.as_secs_f64() * 1e3;
                if !args.json {
                    println!(
                        "trial {n}: {ms:.0} ms from kill -9 to the new holder's answer \
                         ({} progress notifications written before it came after it)",
                        trial.progress_after_kill
                    );
                }
                report.times_ms.push(ms);
                report.progress_after_kill.push(trial.progress_after_kill);
                report.went_on += usize::from(trial.went_on);
            }
            Err(err) => {
                report.errors += 1;
                if report.error_samples.len() < 5 {
                    report.error_samples.push(format!("trial {n}: {err:#}"));
                }
                if !args.json {
                    println!("trial {n}: {err:#}");
                }
            }
        }
    }
    report.median_ms = median(report.times_ms.clone());
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "median {:.0} ms over {} trials; {} went on through the new holder; {} errors",
            report.median_ms,
            report.times_ms.len(),
            report.went_on,
            report.errors
        );
    }
    Ok(())
}

/// How long trial `n` waits after the first progress notification before the kill.
fn phase(n: usize) -> Duration {
    let step = PHASE_STEP.as_millis() as u64;
    let period = RENEWAL.as_millis() as u64;
    Duration::from_millis(n as u64 * step % period)
}

/// One trial: a session on `holder`, a long call through `follower`, `holder` killed `phase`
/// after the call's first progress notification reached the client.
async fn trial(
    mut holder: Node,
    follower: &Node,
    redis_url: &str,
    phase: Duration,
) -> anyhow::Result<Trial> {
    let session = initialize(holder.addr).await?;
    let held_by = holder_of(redis_url, &session)?;
    ensure!(
        held_by == holder.name,
        "the session is held by {held_by:?}, not by {:?} where it began",
        holder.name
    );
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {
            "name": "progress",
            "arguments": {"steps": 10_000, "delay_ms": 20},
            "_meta": {"progressToken": "failover"},
        },
    });
    let mut stream = http::post(follower.addr, Some(&session), &call).await?;
    let first = stream.next().await?.context("the call's stream ended")?;
    ensure!(
        first["method"] == "notifications/progress",
        "expected progress first, got {first}"
    );

    // The notifications that come meanwhile are read, so that none waits in a buffer.
    let _ = tokio::time::timeout(phase, async {
        while let Ok(Some(_)) = stream.next().await {}
    })
    .await;
    let killed = Instant::now();
    holder.kill();
    let mut progress_after_kill = 0;
    let failover = loop {
        let message = stream
            .next()
            .await?
            .context("the call's stream ended without its response")?;
        if message["method"] == "notifications/progress" {
            progress_after_kill += 1;
            continue;
        }
        ensure!(
            message["id"] == 2,
            "expected the call's response, got {message}"
        );
        ensure!(
            message.get("error").is_some(),
            "the call finished on a dead node: {message}"
        );
        break killed.elapsed();
    };
    let went_on = echo(follower.addr, &session).await.is_ok();
    // Leaves nothing behind in Redis; a failed DELETE only leaves keys that expire.
    let _ = http::delete(follower.addr, &session).await;
    Ok(Trial {
        failover,
        progress_after_kill,
        went_on,
    })
}

/// Opens a session on the node at `addr`; returns its id.
async fn initialize(addr: SocketAddr) -> anyhow::Result<String> {
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": http::PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcp-failover", "version": "0"},
        },
    });
    let reply = http::post(addr, None, &init).await?;
    let session = reply.session.clone().context("no session id")?;
    let answer = reply.message().await?;
    ensure!(answer.get("result").is_some(), "initialize: {answer}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    http::post(addr, Some(&session), &initialized).await?;
    Ok(session)
}

/// Calls `echo` in `session` through `addr`.
async fn echo(addr: SocketAddr, session: &str) -> anyhow::Result<()> {
    let call = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "after"}},
    });
    let answer = http::post(addr, Some(session), &call)
        .await?
        .message()
        .await?;
    ensure!(
        answer["result"]["content"][0]["text"] == "after",
        "echo after the failover: {answer}"
    );
    Ok(())
}

/// The node holding `session`, from Redis (the field `node` of `mcp:{S}`, the default prefix).
fn holder_of(redis_url: &str, session: &str) -> anyhow::Result<String> {
    let mut connection = ::redis::Client::open(redis_url)?.get_connection()?;
    let node: Option<String> = ::redis::cmd("HGET")
        .arg(format!("mcp:{{{session}}}"))
        .arg("node")
        .query(&mut connection)?;
    node.context("no holder in Redis")
}
