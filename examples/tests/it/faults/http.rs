//! MCP over raw HTTP/1.1, for the fault tests: every request on its own connection, read until
//! the server closes it or a deadline passes, so that a test sees exactly what came, and when.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a request may take before the test takes it as unanswered.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// What came back for one request.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    head: String,
    pub(crate) body: String,
    /// Whether the server ended the response (else the deadline passed first).
    pub(crate) ended: bool,
}

impl Answer {
    /// The value of header `name` (lower case), if the answer has it.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The JSON-RPC messages of the answer: the body, or each SSE event's data.
    pub(crate) fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"))
        {
            self.body
                .split("\n\n")
                .filter_map(|event| {
                    let data: Vec<&str> = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim_start)
                        .collect();
                    (!data.is_empty()).then(|| data.join("\n"))
                })
                .filter_map(|data| serde_json::from_str(&data).ok())
                .collect()
        } else {
            serde_json::from_str(&self.body).into_iter().collect()
        }
    }

    /// The response to request `id`, if it came.
    pub(crate) fn response(&self, id: u64) -> Option<Value> {
        self.messages().into_iter().find(|m| {
            m["id"] == json!(id) && (m.get("result").is_some() || m.get("error").is_some())
        })
    }

    /// The text of the result of request `id`, if it came and is a result.
    pub(crate) fn text(&self, id: u64) -> Option<String> {
        let response = self.response(id)?;
        response["result"]["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
    }

    /// The last SSE event id of the answer.
    pub(crate) fn last_event_id(&self) -> Option<String> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("id:"))
            .map(|id| id.trim().to_owned())
            .next_back()
    }
}

/// One request to `addr`, read until the server ends the response or `limit` passes.
pub(crate) async fn request(
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
    limit: Duration,
) -> Answer {
    let mut extra = String::new();
    for (name, value) in headers {
        extra.push_str(&format!("{name}: {value}\r\n"));
    }
    let request = format!(
        "{method} /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: application/json, text/event-stream\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    let mut ended = false;
    let mut buf = [0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) => {
                ended = true;
                break;
            }
            Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
            // A reset ends the response as surely as a close.
            Ok(Err(_)) => {
                ended = true;
                break;
            }
            Err(_) => break,
        }
    }
    parse(&raw, ended)
}

fn parse(raw: &[u8], ended: bool) -> Answer {
    let text = String::from_utf8_lossy(raw);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return Answer {
            status: 0,
            head: text.into_owned(),
            body: String::new(),
            ended,
        };
    };
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        head: head.to_owned(),
        body,
        ended,
    }
}

/// The data of a chunked body, as far as it came.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            out.push_str(&rest[..rest.len().min(size)]);
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    out
}

/// The headers of a request of session `sid`.
fn session_headers(sid: &str) -> [(&str, &str); 2] {
    [
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ]
}

/// Starts a session on `addr`; its id.
pub(crate) async fn initialize(addr: SocketAddr) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "faults", "version": "0"}}});
    let answer = request(addr, "POST", &[], &init.to_string(), WAIT).await;
    assert_eq!(answer.status, 200, "initialize: {answer:?}");
    let sid = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = request(
        addr,
        "POST",
        &session_headers(&sid),
        &initialized.to_string(),
        WAIT,
    )
    .await;
    assert_eq!(answer.status, 202, "initialized: {answer:?}");
    sid
}

/// `tools/call` of `tool` with `arguments`, as request `id` of session `sid`, through `addr`;
/// read for at most `limit`.
pub(crate) async fn call_within(
    addr: SocketAddr,
    sid: &str,
    id: u64,
    tool: &str,
    arguments: Value,
    limit: Duration,
) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": {"progressToken": id}}});
    request(
        addr,
        "POST",
        &session_headers(sid),
        &body.to_string(),
        limit,
    )
    .await
}

/// [`call_within`] the test's patience.
pub(crate) async fn call(
    addr: SocketAddr,
    sid: &str,
    id: u64,
    tool: &str,
    arguments: Value,
) -> Answer {
    call_within(addr, sid, id, tool, arguments, WAIT).await
}

/// A GET of session `sid` through `addr` resuming after `last_event_id`, read for `limit`.
pub(crate) async fn resume(
    addr: SocketAddr,
    sid: &str,
    last_event_id: &str,
    limit: Duration,
) -> Answer {
    let [a, b] = session_headers(sid);
    request(
        addr,
        "GET",
        &[a, b, ("last-event-id", last_event_id)],
        "",
        limit,
    )
    .await
}
