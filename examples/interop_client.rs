//! Our client in the interop suite (`cargo xtask interop`): runs one scenario against an MCP
//! server of another implementation and prints one line, `ok: ...` or `FAIL (step): reason`.
//!
//! ```text
//! cargo run --example interop_client -- URL SCENARIO   # or MCP_URL=URL MCP_SCENARIO=SCENARIO
//! ```
//!
//! Scenarios, for servers with an `echo {text}` and a `progress {steps, delay_ms}` tool:
//! - `full`: initialise, list the tools, call `echo`, call `progress` and receive every progress
//!   notification in order, close the session (DELETE);
//! - `json`: the same against a server in JSON-response mode (which may drop the progress
//!   notifications: only the results are checked);
//! - `stateless`: initialise, list, call `echo`, close;
//! - `resume`: call `progress` through a local TCP proxy that cuts the connection after two
//!   notifications; the client must resume the stream (`Last-Event-ID`) and receive every
//!   notification exactly once, in order, then the result;
//! - `modern`: the per-request protocol of 2026-07-28 (`Family::PerRequest`): no `initialize`, list the
//!   tools, call `echo` and `progress` (every notification in order), no session id ever;
//! - `param-headers`: 2026-07-28 as `modern`; list the tools, then call `region`, which
//!   declares `region` mirrored (`x-mcp-header`), and check that the server saw the argument in
//!   `Mcp-Param-Region`: plain when it is plain ASCII, `=?base64?...?=` when it is not.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use clap::Parser as _;
use mcp_streamable_http::client::{Client, ClientConnection, Family};
use mcp_streamable_http::jsonrpc::{Id, Message, Notification, Request, to_raw_value};
use mcp_streamable_http::transport::{Connection, Sender, Transport};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The whole scenario must finish within this, or it fails rather than hangs.
const SCENARIO_LIMIT: Duration = Duration::from_secs(60);
/// Any one answer must come within this.
const ANSWER_LIMIT: Duration = Duration::from_secs(15);

/// A failure and the step it happened in.
struct Failure {
    step: &'static str,
    error: anyhow::Error,
}

trait Step<T> {
    fn step(self, step: &'static str) -> Result<T, Failure>;
}

impl<T> Step<T> for anyhow::Result<T> {
    fn step(self, step: &'static str) -> Result<T, Failure> {
        self.map_err(|error| Failure { step, error })
    }
}

/// The connection and the next request id.
struct Session {
    conn: ClientConnection,
    next_id: i64,
}

impl Session {
    /// Sends a request and reads until its response, returning the result and the
    /// notifications that came first.
    async fn call(
        &mut self,
        method: &str,
        params: Value,
    ) -> anyhow::Result<(Value, Vec<Notification>)> {
        self.next_id += 1;
        let id = Id::from(self.next_id);
        let request = Request::new(id.clone(), method, Some(to_raw_value(&params)?));
        self.conn
            .sender()
            .send(request.into())
            .await
            .with_context(|| format!("sending {method}"))?;
        let mut notifications = Vec::new();
        loop {
            let message = tokio::time::timeout(ANSWER_LIMIT, self.conn.recv())
                .await
                .with_context(|| format!("no answer to {method} within {ANSWER_LIMIT:?}"))??
                .context("the connection ended")?;
            match message {
                Message::Response(r) if r.id() == Some(&id) => match r.result() {
                    Ok(result) => return Ok((serde_json::from_str(result.get())?, notifications)),
                    Err(e) => bail!("{method} failed: {} ({})", e.message, e.code),
                },
                Message::Notification(n) => notifications.push(n),
                other => bail!("unexpected message while waiting for {method}: {other:?}"),
            }
        }
    }

    async fn initialize(&mut self) -> anyhow::Result<()> {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcp-streamable-http interop", "version": "0"}});
        let (result, _) = self.call("initialize", params).await?;
        ensure!(
            result["protocolVersion"].is_string(),
            "no protocolVersion in {result}"
        );
        let initialized = Notification::new("notifications/initialized", None);
        self.conn.sender().send(initialized.into()).await?;
        Ok(())
    }

    async fn list_tools(&mut self) -> anyhow::Result<()> {
        let (result, _) = self.call("tools/list", json!({})).await?;
        let names: Vec<&str> = result["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        ensure!(
            names.contains(&"echo") && names.contains(&"progress"),
            "tools: {names:?}"
        );
        Ok(())
    }

    async fn echo(&mut self) -> anyhow::Result<()> {
        let (result, _) = self
            .call(
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "interop"}}),
            )
            .await?;
        ensure!(
            result["content"][0]["text"] == "interop",
            "echo returned {result}"
        );
        Ok(())
    }

    /// Calls `region` with `value`; returns the text of its result.
    async fn region(&mut self, value: &str) -> anyhow::Result<String> {
        let params = json!({"name": "region", "arguments": {"region": value}});
        let (result, _) = self.call("tools/call", params).await?;
        result["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("region returned {result}"))
    }

    /// Calls `progress`; returns the progress values received.
    async fn progress(&mut self, steps: u64, delay_ms: u64) -> anyhow::Result<Vec<u64>> {
        let params = json!({"name": "progress", "arguments": {"steps": steps, "delay_ms": delay_ms}, "_meta": {"progressToken": "interop"}});
        let (result, notes) = self.call("tools/call", params).await?;
        ensure!(
            result["content"][0]["text"] == "done",
            "progress returned {result}"
        );
        notes
            .iter()
            .filter(|n| n.method == "notifications/progress")
            .map(|n| {
                n.parse_params::<Value>()?["progress"]
                    .as_u64()
                    .context("progress is not a number")
            })
            .collect()
    }
}

/// A connection with the client's default family (`Auto`: the `initialize` the scenario sends
/// starts a session).
async fn connect(url: &str) -> anyhow::Result<Session> {
    connect_in(url, None).await
}

async fn connect_in(url: &str, family: Option<Family>) -> anyhow::Result<Session> {
    let mut builder = Client::builder(url)
        .standalone_stream(false)
        .client_info("mcp-streamable-http interop", "0");
    if let Some(family) = family {
        builder = builder.family(family);
    }
    let conn = builder.build()?.connect().await?;
    Ok(Session { conn, next_id: 0 })
}

async fn run(url: &str, scenario: &str) -> Result<String, Failure> {
    match scenario {
        "full" | "json" | "stateless" => {
            let mut s = connect(url).await.step("connect")?;
            s.initialize().await.step("initialize")?;
            s.list_tools().await.step("tools/list")?;
            s.echo().await.step("echo")?;
            if scenario != "stateless" {
                let seen = s.progress(3, 0).await.step("progress")?;
                if scenario == "full" && seen != [1, 2, 3] {
                    return Err(Failure {
                        step: "progress",
                        error: anyhow::anyhow!("progress notifications {seen:?}"),
                    });
                }
            }
            s.conn
                .close()
                .await
                .map_err(anyhow::Error::from)
                .step("close")?;
            Ok(format!(
                "{scenario}: initialize, tools/list, echo{}, close",
                if scenario == "stateless" {
                    ""
                } else {
                    ", progress"
                }
            ))
        }
        "resume" => {
            let proxy = Proxy::start(url).await.step("proxy")?;
            let mut s = connect(&proxy.url).await.step("connect")?;
            s.initialize().await.step("initialize")?;
            let seen = resume(&mut s, &proxy).await.step("progress with a cut")?;
            s.conn
                .close()
                .await
                .map_err(anyhow::Error::from)
                .step("close")?;
            Ok(format!(
                "resume: {} progress notifications once each across a cut",
                seen
            ))
        }
        "modern" => {
            let mut s = connect_in(url, Some(Family::PerRequest))
                .await
                .step("connect")?;
            s.list_tools().await.step("tools/list")?;
            s.echo().await.step("echo")?;
            let seen = s.progress(3, 0).await.step("progress")?;
            if seen != [1, 2, 3] {
                return Err(Failure {
                    step: "progress",
                    error: anyhow::anyhow!("progress notifications {seen:?}"),
                });
            }
            if let Some(id) = s.conn.session_id() {
                return Err(Failure {
                    step: "session",
                    error: anyhow::anyhow!("a 2026-07-28 exchange set the session id {id}"),
                });
            }
            s.conn
                .close()
                .await
                .map_err(anyhow::Error::from)
                .step("close")?;
            Ok(
                "modern: 2026-07-28 without initialize, tools/list, echo, progress, no session"
                    .into(),
            )
        }
        "param-headers" => {
            let mut s = connect_in(url, Some(Family::PerRequest))
                .await
                .step("connect")?;
            s.list_tools().await.step("tools/list")?;
            for (value, header) in [
                ("eu-west-1", "eu-west-1".to_owned()),
                (
                    "Zürich ",
                    format!("=?base64?{}?=", STANDARD.encode("Zürich ")),
                ),
            ] {
                let seen = s.region(value).await.step("region")?;
                if seen != header {
                    return Err(Failure {
                        step: "region",
                        error: anyhow::anyhow!("Mcp-Param-Region was {seen:?}, not {header:?}"),
                    });
                }
            }
            s.conn
                .close()
                .await
                .map_err(anyhow::Error::from)
                .step("close")?;
            Ok("param-headers: tools/list, region plain and base64 in Mcp-Param-Region".into())
        }
        other => Err(Failure {
            step: "arguments",
            error: anyhow::anyhow!("unknown scenario {other:?}"),
        }),
    }
}

/// Calls `progress`, cutting every connection after the second notification.
async fn resume(s: &mut Session, proxy: &Proxy) -> anyhow::Result<usize> {
    const STEPS: u64 = 6;
    s.next_id += 1;
    let id = Id::from(s.next_id);
    let params = json!({"name": "progress", "arguments": {"steps": STEPS, "delay_ms": 150}, "_meta": {"progressToken": "interop"}});
    s.conn
        .sender()
        .send(Request::new(id.clone(), "tools/call", Some(to_raw_value(&params)?)).into())
        .await?;
    let mut seen = Vec::new();
    let mut accepted_at_cut = None;
    loop {
        let message = tokio::time::timeout(ANSWER_LIMIT, s.conn.recv())
            .await
            .context("no answer")??
            .context("the connection ended")?;
        match message {
            Message::Notification(n) if n.method == "notifications/progress" => {
                seen.push(
                    n.parse_params::<Value>()?["progress"]
                        .as_u64()
                        .context("progress is not a number")?,
                );
                if seen.len() == 2 {
                    accepted_at_cut = Some(proxy.accepted());
                    proxy.cut();
                }
            }
            Message::Response(r) if r.id() == Some(&id) => {
                ensure!(!r.is_error(), "progress failed: {:?}", r.result().err());
                break;
            }
            other => bail!("unexpected {other:?}"),
        }
    }
    ensure!(
        seen == (1..=STEPS).collect::<Vec<_>>(),
        "progress notifications {seen:?}"
    );
    ensure!(
        accepted_at_cut.is_some_and(|n| proxy.accepted() > n),
        "the stream was not cut and resumed"
    );
    Ok(seen.len())
}

/// A TCP proxy in front of the server, whose connections can be cut at once.
struct Proxy {
    url: String,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
}

impl Proxy {
    async fn start(url: &str) -> anyhow::Result<Proxy> {
        let (scheme_host, path) = url
            .strip_prefix("http://")
            .context("the URL must be http://")?
            .split_once('/')
            .context("the URL needs a path")?;
        let target: SocketAddr = scheme_host
            .parse()
            .context("the URL's host must be IP:PORT")?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/{path}", listener.local_addr()?);
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accepted: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
        let (tracked, counter) = (Arc::clone(&connections), Arc::clone(&accepted));
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                tracked.lock().unwrap().push(task);
            }
        });
        Ok(Proxy {
            url,
            connections,
            accepted,
        })
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn cut(&self) {
        for task in self.connections.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

/// Our client in the interop suite: runs one scenario against a server and prints `ok: ...` or
/// `FAIL (step): reason`.
#[derive(Debug, clap::Parser)]
#[command(name = "interop_client")]
struct Args {
    /// The server's MCP endpoint.
    #[arg(env = "MCP_URL", value_name = "URL")]
    url: String,
    /// full, json, stateless, resume, modern or param-headers.
    #[arg(env = "MCP_SCENARIO", value_name = "SCENARIO")]
    scenario: String,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let Args { url, scenario } = Args::parse();
    let outcome = match tokio::time::timeout(SCENARIO_LIMIT, run(&url, &scenario)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(Failure {
            step: "scenario",
            error: anyhow::anyhow!("did not finish within {SCENARIO_LIMIT:?}"),
        }),
    };
    match outcome {
        Ok(summary) => {
            println!("ok: {summary}");
            std::process::ExitCode::SUCCESS
        }
        Err(Failure { step, error }) => {
            println!("FAIL ({step}): {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
