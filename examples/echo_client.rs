//! An MCP client over the Streamable HTTP transport, for the echo server (`echo_server`).
//!
//! ```text
//! cargo run --example echo_server -- --addr 127.0.0.1:8080   # in one terminal
//! cargo run --example echo_client -- http://127.0.0.1:8080/mcp   # or MCP_URL=http://...
//! ```
//!
//! It initialises a session, lists the tools, calls `echo`, calls `progress` (printing each
//! progress notification as it arrives), calls `ping_client` (answering the server's ping on
//! the way), then closes the session (DELETE).

use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Parser as _;
use mcp_streamable_http::client::{Client, ClientConnection, ClientSender};
use mcp_streamable_http::jsonrpc::{
    ErrorObject, Message, Notification, Request, Response, to_raw_value,
};
use mcp_streamable_http::transport::{Connection, Sender, Transport};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// How long to wait for any one answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Requests by id, each awaiting its own response ([`ClientSender::call`]).
struct Peer {
    sender: ClientSender,
    next_id: i64,
}

impl Peer {
    async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        let request = Request::new(self.next_id, method, Some(to_raw_value(&params)?));
        let response = self
            .sender
            .call(request, ANSWER_TIMEOUT)
            .await
            .with_context(|| format!("calling {method}"))?;
        match response.result() {
            Ok(result) => Ok(serde_json::from_str(result.get())?),
            Err(error) => bail!("{method} failed: {} ({})", error.message, error.code),
        }
    }
}

/// Reads everything else the server sends: progress is printed, and the server's pings are
/// answered (the answers to our requests go to their callers). Hands the connection back when told to stop (`recv` is
/// cancel safe, so nothing is lost by stopping it mid-wait).
async fn read_loop(
    mut conn: ClientConnection,
    mut stop: oneshot::Receiver<()>,
) -> ClientConnection {
    let sender = conn.sender();
    loop {
        let received = tokio::select! {
            biased;
            _ = &mut stop => return conn,
            received = conn.recv() => received,
        };
        match received {
            Ok(Some(Message::Response(response))) => {
                eprintln!("an answer nobody waits for: {:?}", response.id());
            }
            Ok(Some(Message::Notification(n))) => {
                let params: Value = n.parse_params().unwrap_or(Value::Null);
                match n.method.as_str() {
                    "notifications/progress" => {
                        println!("  progress {}/{}", params["progress"], params["total"])
                    }
                    "notifications/message" => println!("  server says: {}", params["data"]),
                    other => println!("  notification {other}"),
                }
            }
            Ok(Some(Message::Request(request))) => {
                let answer = if request.method == "ping" {
                    println!("  the server pinged us; answering");
                    Response::success(request.id, to_raw_value(&json!({})).expect("{} is JSON"))
                } else {
                    let error = ErrorObject::new(
                        mcp_streamable_http::jsonrpc::code::METHOD_NOT_FOUND,
                        format!("no method {}", request.method),
                    );
                    Response::error(Some(request.id), error)
                };
                if let Err(err) = sender.send(answer.into()).await {
                    eprintln!("could not answer the server: {err}");
                }
            }
            Ok(None) => return conn,
            Err(err) if err.is_recoverable() => eprintln!("skipped a message: {err}"),
            Err(err) => {
                eprintln!("connection failed: {err}");
                return conn;
            }
        }
    }
}

/// A client of the echo server: initializes a session, lists the tools, calls `echo`,
/// `progress` and `ping_client`, closes the session.
#[derive(Debug, clap::Parser)]
#[command(name = "echo_client")]
struct Args {
    /// The server's MCP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(env = "MCP_URL", value_name = "URL")]
    url: String,
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = Args::parse().url;
    let conn = Client::builder(&url).build()?.connect().await?;
    let sender = conn.sender();
    let (stop, stopped) = oneshot::channel();
    let reader = tokio::spawn(read_loop(conn, stopped));
    let mut peer = Peer {
        sender: sender.clone(),
        next_id: 0,
    };

    let init = peer
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "echo_client", "version": "0.1.0"}}),
        )
        .await?;
    println!(
        "initialized: {} speaking {}",
        init["serverInfo"]["name"], init["protocolVersion"]
    );
    sender
        .send(Notification::new("notifications/initialized", None).into())
        .await?;

    let tools = peer.request("tools/list", json!({})).await?;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    println!("tools: {}", names.join(", "));

    let echo = peer
        .request(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hello, MCP"}}),
        )
        .await?;
    println!("echo: {}", text_of(&echo));

    println!("progress:");
    let progress = peer
        .request(
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 5, "delay_ms": 100}, "_meta": {"progressToken": "echo-client"}}),
        )
        .await?;
    println!("progress: {}", text_of(&progress));

    let pong = peer
        .request(
            "tools/call",
            json!({"name": "ping_client", "arguments": {}}),
        )
        .await?;
    println!("ping_client: {}", text_of(&pong));

    let _ = stop.send(());
    let mut conn = reader.await.context("the read loop failed")?;
    conn.close().await?;
    println!("closed the session");
    Ok(())
}
