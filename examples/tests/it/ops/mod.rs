//! What an operator touches (issue 29), run as processes: `echo_server`'s logs, its metrics
//! scraped by a real Prometheus, its spans over OTLP, and the deployment files that run it.
//! Loopback only, ports the OS picks; every process is killed by its pid when its test ends,
//! however it ends.

mod deploy;
mod logs;
mod otlp;
mod prometheus;

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::faults::echo_server_command;

/// How long the server may take to print its addresses.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long one exchange, or a process's exit after SIGTERM, may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// An `echo_server` process, killed by its pid when dropped.
struct EchoServer {
    child: Child,
    /// Where it serves MCP.
    addr: SocketAddr,
    /// Where it serves its metrics, with `--metrics`.
    metrics: Option<SocketAddr>,
}

impl EchoServer {
    /// `echo_server` with these flags and variables, on ports the OS picks; its stderr piped
    /// (not a terminal) when `stderr` is, else dropped.
    fn start(flags: &[&str], env: &[(&str, &str)], stderr: Stdio) -> EchoServer {
        let mut command = echo_server_command();
        command.args(["--addr", "127.0.0.1:0"]).args(flags);
        for (name, value) in env {
            command.env(name, value);
        }
        EchoServer::spawn(command, stderr, flags.contains(&"--metrics"))
    }

    fn spawn(mut command: Command, stderr: Stdio, metrics: bool) -> EchoServer {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("echo_server starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let mut server = EchoServer {
            child,
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            metrics: None,
        };
        let url = |line: &str, prefix: &str, suffix: &str| {
            let addr = line.strip_prefix(prefix)?.strip_suffix(suffix)?;
            addr.parse::<SocketAddr>().ok()
        };
        let line = rx.recv_timeout(START_TIMEOUT).unwrap_or_default();
        server.addr = url(&line, "listening on http://", "/mcp")
            .unwrap_or_else(|| panic!("echo_server printed no address first: {line:?}"));
        if metrics {
            let line = rx.recv_timeout(START_TIMEOUT).unwrap_or_default();
            server.metrics = Some(
                url(&line, "metrics on http://", "/metrics")
                    .unwrap_or_else(|| panic!("echo_server printed no metrics address: {line:?}")),
            );
        }
        server
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Its stderr, when piped.
    fn stderr(&mut self) -> ChildStderr {
        self.child.stderr.take().expect("stderr piped")
    }

    /// SIGTERM, then its exit, within [`EXCHANGE_TIMEOUT`] (killed after it).
    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(EXCHANGE_TIMEOUT / 100);
        }
        panic!("echo_server did not stop within {EXCHANGE_TIMEOUT:?} of SIGTERM");
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client of the tests: hyper's, plain HTTP/1.1.
#[derive(Clone)]
struct Http(Client<HttpConnector, Full<Bytes>>);

/// A response: status, `Mcp-Session-Id` if any, body.
struct Answer {
    status: u16,
    session: Option<String>,
    body: String,
}

impl Http {
    fn new() -> Http {
        Http(Client::builder(TokioExecutor::new()).build_http())
    }

    /// `method url` with these headers and body, the whole answer read.
    async fn send(&self, method: &str, url: &str, headers: &[(&str, &str)], body: Bytes) -> Answer {
        let mut request = hyper::Request::builder().method(method).uri(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(body)).unwrap();
        let exchange = async {
            let response = self.0.request(request).await.expect("an answer");
            let status = response.status().as_u16();
            let session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = response.into_body().collect().await.unwrap().to_bytes();
            Answer {
                status,
                session,
                body: String::from_utf8_lossy(&body).into_owned(),
            }
        };
        tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| panic!("{method} {url}: no answer in {EXCHANGE_TIMEOUT:?}"))
    }

    /// A GET of `url`.
    async fn get(&self, url: &str) -> Answer {
        self.send("GET", url, &[], Bytes::new()).await
    }

    /// The body of a GET of `url` answered 200 within [`EXCHANGE_TIMEOUT`], or `None` (a
    /// server that does not listen yet, say).
    async fn try_get(&self, url: &str) -> Option<String> {
        let request = hyper::Request::get(url)
            .body(Full::new(Bytes::new()))
            .ok()?;
        let exchange = async {
            let response = self.0.request(request).await.ok()?;
            if response.status() != hyper::StatusCode::OK {
                return None;
            }
            let body = response.into_body().collect().await.ok()?.to_bytes();
            Some(String::from_utf8_lossy(&body).into_owned())
        };
        tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
            .await
            .ok()?
    }
}

/// An MCP session with `echo_server`, over [`Http`].
struct Session {
    http: Http,
    url: String,
    id: String,
}

impl Session {
    /// `initialize` (2025-11-25) and `notifications/initialized`.
    async fn open(http: &Http, server: &EchoServer) -> Session {
        let url = server.url("/mcp");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "ops-test", "version": "0"}}});
        let answer = http
            .send("POST", &url, &post_headers(None), json_body(&init))
            .await;
        assert_eq!(answer.status, 200, "initialize: {}", answer.body);
        let id = answer.session.expect("a session id");
        let session = Session {
            http: http.clone(),
            url,
            id,
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = session.post(&note).await;
        assert_eq!(
            answer.status, 202,
            "notifications/initialized: {}",
            answer.body
        );
        session
    }

    async fn post(&self, message: &Value) -> Answer {
        let headers = post_headers(Some(&self.id));
        self.http
            .send("POST", &self.url, &headers, json_body(message))
            .await
    }

    /// `tools/call echo`, with `meta` as its `_meta`; the text it echoed.
    async fn echo(&self, id: u64, text: &str, meta: Value) -> String {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": text}, "_meta": meta}});
        let answer = self.post(&call).await;
        assert_eq!(answer.status, 200, "tools/call: {}", answer.body);
        let data = answer
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            // The stream opens with an event without data (the point to resume from).
            .find(|data| !data.trim().is_empty())
            .unwrap_or(&answer.body);
        let response: Value = serde_json::from_str(data.trim()).expect("a JSON-RPC response");
        response["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {response}"))
            .to_owned()
    }

    /// DELETE of the session: 200 or 204.
    async fn delete(self) {
        let headers = [
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let answer = self
            .http
            .send("DELETE", &self.url, &headers, Bytes::new())
            .await;
        assert!(
            matches!(answer.status, 200 | 204),
            "DELETE: {}",
            answer.status
        );
    }
}

fn post_headers(session: Option<&str>) -> Vec<(&str, &str)> {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if let Some(id) = session {
        headers.push(("mcp-session-id", id));
        headers.push(("mcp-protocol-version", "2025-11-25"));
    }
    headers
}

fn json_body(message: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(message).unwrap())
}
