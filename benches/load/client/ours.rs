//! Our client (`mcp-streamable-client`) as an application drives it through the
//! `mcp_transport` traits: one connection, its sender shared by every caller, and one task
//! that receives and hands each response to the caller waiting for its id.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use anyhow::{Context as _, bail};
use mcp_jsonrpc::{Id, Message, Notification, Request, Response, to_raw_value};
use mcp_streamable_client::{Client, ClientConnection, ClientSender, Family, Telemetry};
use mcp_transport::{Connection, Sender, Transport};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::{oneshot, watch};

use super::callers::{self, CLOSE_TIMEOUT, Echo, Measured, Plan, START_TIMEOUT};
use crate::errors::Errors;

/// The protocol version asked for in `initialize`: the newest of the session-based family,
/// which both clients and the echo server speak.
const PROTOCOL_VERSION: &str = "2025-11-25";

/// The id of `initialize`; the calls count up from the next one.
const INITIALIZE_ID: i64 = 0;

/// The callers waiting for a response, by request id.
type Waiting = Mutex<HashMap<i64, oneshot::Sender<Response>>>;

/// The table of waiting callers, even if a caller panicked while holding it.
fn lock(waiting: &Waiting) -> MutexGuard<'_, HashMap<i64, oneshot::Sender<Response>>> {
    waiting.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs the closed loop with our client against `url`.
pub(crate) async fn run(url: &str, plan: &Plan) -> anyhow::Result<Measured> {
    // Pinned to the session-based protocol, so that nothing is probed; the standalone GET
    // stream stays on, as users run it (and as rmcp's client always opens it). Built with
    // `otel` (through `examples`) and no provider installed, it records nothing, as a program
    // without providers should (`Telemetry::off`).
    let client = Client::builder(url)
        .family(Family::Session)
        .telemetry(Telemetry::off())
        .build()
        .context("building the client")?;
    let mut conn = client.connect().await.context("connecting")?;
    let sender = conn.sender();
    tokio::time::timeout(START_TIMEOUT, start(&mut conn, &sender))
        .await
        .context("the session did not start in time")??;

    let waiting: Arc<Waiting> = Arc::default();
    let (stop, stopped) = watch::channel(false);
    let receiver = tokio::spawn(receive(conn, waiting.clone(), stopped));
    let ours = Ours {
        sender,
        waiting,
        next_id: Arc::new(AtomicI64::new(INITIALIZE_ID + 1)),
    };
    let measured = callers::run(ours, plan).await;
    stop.send_replace(true);
    let receive_errors = receiver.await.context("the receiving task failed")?;
    let mut measured = measured?;
    measured.tally.errors.merge(receive_errors);
    Ok(measured)
}

/// `initialize`, its result, then `notifications/initialized`.
async fn start(conn: &mut ClientConnection, sender: &ClientSender) -> anyhow::Result<()> {
    let params = to_raw_value(&json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcp-client-load", "version": env!("CARGO_PKG_VERSION")},
    }))?;
    let initialize = Request::new(INITIALIZE_ID, "initialize", Some(params));
    sender
        .send(initialize.into())
        .await
        .context("sending initialize")?;
    // Bounded by the caller's timeout; anything before the result (a log message) is skipped.
    loop {
        match conn
            .recv()
            .await
            .context("receiving the initialize result")?
        {
            Some(Message::Response(response))
                if response.id() == Some(&Id::from(INITIALIZE_ID)) =>
            {
                let result = response
                    .result()
                    .map_err(|e| anyhow::anyhow!("initialize failed: {} {}", e.code, e.message))?;
                if !result.get().contains("protocolVersion") {
                    bail!(
                        "initialize result without protocolVersion: {}",
                        result.get()
                    );
                }
                break;
            }
            Some(_) => {}
            None => bail!("the connection closed before the initialize result"),
        }
    }
    let initialized = Notification::new("notifications/initialized", None);
    sender
        .send(initialized.into())
        .await
        .context("sending notifications/initialized")?;
    Ok(())
}

/// Receives until told to stop (or the connection ends) and hands each response to its caller;
/// then closes the connection (DELETE, bounded) and returns what went wrong.
async fn receive(
    mut conn: ClientConnection,
    waiting: Arc<Waiting>,
    mut stop: watch::Receiver<bool>,
) -> Errors {
    let mut errors = Errors::default();
    loop {
        let received = tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => break,
            received = conn.recv() => received,
        };
        match received {
            Ok(Some(Message::Response(response))) => {
                let caller = match response.id() {
                    Some(Id::Number(id)) => lock(&waiting).remove(id),
                    _ => None,
                };
                match caller {
                    // A caller that gave up (its timeout) has dropped its receiver: fine.
                    Some(caller) => drop(caller.send(response)),
                    None => errors.add(format!(
                        "a response to {:?}, which no caller waits for",
                        response.id()
                    )),
                }
            }
            // Requests and notifications from the server: the echo server sends none here.
            Ok(Some(_)) => {}
            Ok(None) => {
                errors.add("the connection closed during the run".to_owned());
                break;
            }
            Err(err) if err.is_recoverable() => errors.add(format!("receiving: {err:#}")),
            Err(err) => {
                errors.add(format!("receiving failed for good: {err:#}"));
                break;
            }
        }
    }
    // Whoever still waits hears that no response will come.
    lock(&waiting).clear();
    match tokio::time::timeout(CLOSE_TIMEOUT, conn.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => errors.add(format!("closing the session: {err:#}")),
        Err(_) => errors.add(format!("closing the session took over {CLOSE_TIMEOUT:?}")),
    }
    errors
}

/// What each caller holds: the shared sender and the table of waiting callers.
#[derive(Debug, Clone)]
struct Ours {
    sender: ClientSender,
    waiting: Arc<Waiting>,
    next_id: Arc<AtomicI64>,
}

/// Removes a caller's entry when its call ends, however it ends (a timeout drops the call).
struct Registration<'a> {
    waiting: &'a Waiting,
    id: i64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        lock(self.waiting).remove(&self.id);
    }
}

impl Echo for Ours {
    async fn echo(&self, text: String) -> anyhow::Result<()> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let params = to_raw_value(&json!({"name": "echo", "arguments": {"text": text}}))?;
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id, tx);
        let _registration = Registration {
            waiting: &self.waiting,
            id,
        };
        self.sender
            .send(Request::new(id, "tools/call", Some(params)).into())
            .await
            .with_context(|| format!("sending request {id}"))?;
        let response = rx
            .await
            .with_context(|| format!("no response to request {id}: the connection closed"))?;
        match response.result() {
            Ok(result) => check_echo(result.get(), &text),
            Err(e) => bail!("request {id} failed: {} {}", e.code, e.message),
        }
    }

    fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

/// Checks that a `tools/call` result is the one text content `expected`.
fn check_echo(result: &str, expected: &str) -> anyhow::Result<()> {
    #[derive(Deserialize)]
    struct ToolResult<'a> {
        #[serde(borrow)]
        content: Vec<Content<'a>>,
        #[serde(default, rename = "isError")]
        is_error: bool,
    }
    #[derive(Deserialize)]
    struct Content<'a> {
        #[serde(rename = "type")]
        kind: Cow<'a, str>,
        #[serde(borrow)]
        text: Cow<'a, str>,
    }
    let parsed: ToolResult<'_> =
        serde_json::from_str(result).with_context(|| format!("not a tool result: {result}"))?;
    match parsed.content.as_slice() {
        [Content { kind, text }] if !parsed.is_error && kind == "text" && text == expected => {
            Ok(())
        }
        _ => bail!("wrong echo: expected {expected:?}, got {result}"),
    }
}
