//! Two gateway processes as nodes on one Redis (`serve --redis`): a session's child lives on the
//! node holding the session, whichever node a request reaches, and a killed holder's session goes
//! on through the other node with a new child there (SPEC N1, N2, N4).
//!
//! Requests are written by hand, each on a connection of its own, so that the test says which
//! node each one reaches.

use std::net::SocketAddr;
use std::time::Duration;

use mcp_streamable_redis::testing::RedisServer;
use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::binary::Binary;
use crate::harness::*;

/// A gateway process serving the test child as node `name` of the nodes on a Redis; killed with
/// its process group, and every child it had, if the test ends before it was stopped (`Binary`).
struct Node {
    binary: Binary,
    pid: i32,
    addr: SocketAddr,
}

impl Node {
    async fn start(redis: &RedisServer, name: &str) -> Node {
        let url = redis.url();
        let binary = Binary::serve([
            "--addr",
            "127.0.0.1:0",
            "--pool-size",
            "1",
            "--stop-grace",
            "2",
            "--redis",
            &url,
            "--node",
            name,
        ])
        .await;
        let pid = binary.pid();
        let addr = binary
            .url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("node {name}: {}", binary.url))
            .parse()
            .unwrap();
        Node { binary, pid, addr }
    }

    /// Records the node's children as they are now, to be stopped with it.
    fn note_children(&mut self) {
        for pid in children_of(self.pid) {
            if !self.binary.children.contains(&pid) {
                self.binary.children.push(pid);
            }
        }
    }

    /// SIGKILL: the node dies without a word, its lease lapses, its children are orphans,
    /// stopped here by their pids.
    async fn kill(&mut self) {
        self.note_children();
        kill_process(Pid::from_raw(self.pid).unwrap(), Signal::KILL).unwrap();
        within(self.binary.process.wait()).await.unwrap();
        for pid in self
            .binary
            .children
            .iter()
            .filter_map(|p| Pid::from_raw(*p))
        {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }

    /// SIGTERM: the node stops its children and exits; returns whether it exited cleanly.
    async fn stop(&mut self) -> bool {
        self.note_children();
        kill_process(Pid::from_raw(self.pid).unwrap(), Signal::TERM).unwrap();
        within(self.binary.process.wait()).await.unwrap().success()
    }
}

/// The processes whose parent is `parent`, from `/proc`.
fn children_of(parent: i32) -> Vec<i32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if parent_of(pid) == Some(parent) {
            children.push(pid);
        }
    }
    children
}

/// The parent of process `pid`, from `/proc/PID/stat` (the field after the parenthesised name).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// The protocol revision of the tests' sessions: one whose streams are primed with an event id,
/// so that a stream cut before its first message can be resumed.
const REVISION: &str = "2025-11-25";

/// An HTTP exchange's outcome: its status, the session id it names and its body's content.
struct Answer {
    status: u16,
    session: Option<String>,
    body: String,
}

impl Answer {
    /// The JSON-RPC messages of the body.
    fn messages(&self) -> Vec<Value> {
        messages(&self.body)
    }

    /// The id of the last SSE event of the body.
    fn last_event_id(&self) -> Option<String> {
        let mut ids = self.body.lines().filter_map(|l| l.strip_prefix("id:"));
        ids.next_back().map(|id| id.trim().to_owned())
    }
}

/// One request to `addr` on a connection of its own, `extra` headers included, read until the
/// server closes the connection (or it is cut: what came before is the answer).
async fn exchange(addr: SocketAddr, method: &str, extra: &str, body: &str) -> Answer {
    let (stream, response) = begin(addr, method, extra, body, "\r\n\r\n").await;
    finish(stream, response).await
}

/// Sends a request to `addr` on a connection of its own and reads until what came holds
/// `until` (or the connection ends); returns the connection and what came.
async fn begin(
    addr: SocketAddr,
    method: &str,
    extra: &str,
    body: &str,
    until: &str,
) -> (tokio::net::TcpStream, Vec<u8>) {
    let request = format!(
        "{method} /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: application/json, text/event-stream\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\
         \r\n{body}",
        body.len()
    );
    let mut stream = within(tokio::net::TcpStream::connect(addr)).await.unwrap();
    within(stream.write_all(request.as_bytes())).await.unwrap();
    let mut response = Vec::new();
    let mut buf = [0; 8192];
    while !String::from_utf8_lossy(&response).contains(until) {
        let Ok(n @ 1..) = within(stream.read(&mut buf)).await else {
            break;
        };
        response.extend_from_slice(&buf[..n]);
    }
    (stream, response)
}

/// Reads the rest of the answer `response` began on `stream`, until the server closes the
/// connection or it is cut.
async fn finish(mut stream: tokio::net::TcpStream, mut response: Vec<u8>) -> Answer {
    let mut buf = [0; 8192];
    while let Ok(n @ 1..) = within(stream.read(&mut buf)).await {
        response.extend_from_slice(&buf[..n]);
    }
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head");
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    Answer {
        status: head[9..12].parse().unwrap(),
        session: header("mcp-session-id"),
        body: if chunked {
            dechunk(body)
        } else {
            body.to_owned()
        },
    }
}

/// The headers of a request in session `session`, and `extra` ones.
fn in_session(session: &str, extra: &str) -> String {
    format!("mcp-session-id: {session}\r\nmcp-protocol-version: {REVISION}\r\n{extra}")
}

/// POSTs `message` to `addr`, in session `session` if given.
async fn post(addr: SocketAddr, session: Option<&str>, message: Value) -> Answer {
    let extra = session.map(|id| in_session(id, "")).unwrap_or_default();
    exchange(addr, "POST", &extra, &message.to_string()).await
}

/// A chunked body's content, as far as it came.
fn dechunk(mut body: &str) -> String {
    let mut content = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size @ 1..) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        content.push_str(&rest[..size.min(rest.len())]);
        body = rest.get(size + 2..).unwrap_or_default();
    }
    content
}

/// The JSON-RPC messages of an SSE body (its `data:` lines) or a JSON one.
fn messages(body: &str) -> Vec<Value> {
    if body.trim_start().starts_with('{') {
        return vec![serde_json::from_str(body).unwrap()];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter(|data| !data.trim().is_empty())
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

/// Opens a session through `addr`: `initialize` answered, `notifications/initialized` sent.
async fn open(addr: SocketAddr) -> String {
    let params = json!({
        "protocolVersion": REVISION,
        "capabilities": {},
        "clientInfo": {"name": "gateway-it", "version": "0"},
    });
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params});
    let answer = post(addr, None, init).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let messages = answer.messages();
    assert!(
        messages[0]["result"]["serverInfo"].is_object(),
        "{messages:?}"
    );
    let session = answer.session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(addr, Some(&session), initialized).await.status, 202);
    session
}

/// The pid the session's child reports, asked through `addr` under request id `id`.
async fn pid_through(addr: SocketAddr, session: &str, id: i64) -> i32 {
    call_through(addr, session, id, "pid")
        .await
        .parse()
        .unwrap()
}

/// The text of the session's child's answer to tool `tool`, called through `addr` under
/// request id `id`.
async fn call_through(addr: SocketAddr, session: &str, id: i64, tool: &str) -> String {
    let params = json!({"name": tool, "arguments": {}});
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let answer = post(addr, Some(session), call).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = answer.messages();
    let response = answer
        .iter()
        .find(|m| m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no answer to {id}: {answer:?}"));
    let text = response["result"]["content"][0]["text"].as_str();
    text.unwrap_or_else(|| panic!("not a tool result: {response}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_child_lives_on_its_holder_and_a_new_one_on_the_node_it_is_handed_to() {
    let redis = RedisServer::start().expect("redis-server starts");
    let mut a = Node::start(&redis, "a").await;
    let mut b = Node::start(&redis, "b").await;
    let session = open(a.addr).await;

    let on_a = pid_through(a.addr, &session, 1).await;
    let through_b = pid_through(b.addr, &session, 2).await;
    assert_eq!(
        through_b, on_a,
        "b forwarded the call to the holder's child"
    );
    assert_eq!(parent_of(on_a), Some(a.pid), "the child is the holder's");
    a.note_children();
    assert!(
        !children_of(b.pid).contains(&on_a),
        "b started no child for it"
    );

    // SIGTERM: a stops its child and hands the session over (N5); b takes it at once.
    assert!(a.stop().await, "a exits cleanly");
    until(|| !alive(on_a)).await;
    let on_b = pid_through(b.addr, &session, 3).await;
    assert_eq!(parent_of(on_b), Some(b.pid), "a new child, b's");
    assert!(b.stop().await, "b exits cleanly");
    until(|| !alive(on_b)).await;
}

/// Waits until the session's child (asked through `addr`) has read `calls` tool calls besides
/// the `received` ones this asks with (ids from 100): at most 100 times, 50 ms apart.
async fn until_read(addr: SocketAddr, session: &str, calls: usize) {
    for asked in 0..100 {
        let received = call_through(addr, session, 100 + asked as i64, "received").await;
        let received: Vec<String> = serde_json::from_str(&received).unwrap();
        let read = received.iter().filter(|m| *m == "tools/call").count();
        // This `received` call was read too, and those before it.
        if read > calls + asked {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the child did not read {calls} calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holders_session_goes_on_with_a_new_child_on_the_node_that_took_it() {
    let redis = RedisServer::start().expect("redis-server starts");
    let mut a = Node::start(&redis, "a").await;
    let mut b = Node::start(&redis, "b").await;
    let session = open(a.addr).await;
    let old = pid_through(a.addr, &session, 1).await;
    assert_eq!(parent_of(old), Some(a.pid));
    // A call the holder's child is busy with when the holder dies.
    let params = json!({"name": "sleep", "arguments": {"ms": 600_000}});
    let slow = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params});
    let headers = in_session(&session, "");
    // Its stream begun: its first event (the priming one) came.
    let (stream, began) = begin(a.addr, "POST", &headers, &slow.to_string(), "\nid:").await;
    until_read(a.addr, &session, 2).await;

    a.kill().await;
    let cut = finish(stream, began).await;
    let last = cut.last_event_id().expect("the stream was primed");
    // The client resumes the cut stream through b, which takes the session over (a's lease
    // lapsed) and answers the call a left unanswered with an error, not running it again.
    let resumed = exchange(
        b.addr,
        "GET",
        &in_session(&session, &format!("last-event-id: {last}\r\n")),
        "",
    )
    .await;
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    let errors = resumed.messages();
    let error = errors
        .iter()
        .find(|m| m["id"] == json!(2))
        .expect("an answer to the call");
    assert_eq!(error["error"]["code"], json!(-32603), "{error}");
    // b's new child serves the session's calls from then on.
    let new = pid_through(b.addr, &session, 3).await;
    assert_ne!(new, old, "a new child");
    assert_eq!(parent_of(new), Some(b.pid), "the new child is b's");
    assert_eq!(pid_through(b.addr, &session, 4).await, new);
    // It read the client's stored `initialize` and `notifications/initialized` first, and
    // never the call of the dead holder.
    let received: Vec<String> =
        serde_json::from_str(&call_through(b.addr, &session, 5, "received").await).unwrap();
    let expected = [
        "initialize gateway-it",
        "notifications/initialized",
        "tools/call",
        "tools/call",
        "tools/call",
    ];
    assert_eq!(received, expected);

    assert!(b.stop().await, "b exits cleanly");
    until(|| !alive(new)).await;
}
