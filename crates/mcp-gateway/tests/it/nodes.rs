//! Two gateway processes as nodes on one Redis (`serve --redis`): a session's child lives on the
//! node holding the session, whichever node a request reaches, and a killed holder's session goes
//! on through the other node with a new child there (SPEC N1, N2, N4).
//!
//! Requests are written by hand, each on a connection of its own, so that the test says which
//! node each one reaches.

use std::net::SocketAddr;
use std::process::Stdio;

use mcp_streamable_redis::testing::RedisServer;
use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::harness::*;

/// A gateway process serving the test child as node `name` of the nodes on a Redis; killed with
/// its process group, and every child it had, if the test ends before it was stopped.
struct Node {
    process: tokio::process::Child,
    pid: i32,
    addr: SocketAddr,
    children: Vec<i32>,
}

impl Node {
    async fn start(redis: &RedisServer, name: &str) -> Node {
        let mut process = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
            .args(["serve", "--addr", "127.0.0.1:0", "--pool-size", "1"])
            .args(["--stop-grace", "2", "--redis", &redis.url(), "--node", name])
            .args(["--", "python3", CHILD, "normal"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = process.stdout.take().unwrap();
        let pid = process.id().unwrap() as i32;
        let mut first = String::new();
        within(BufReader::new(stdout).read_line(&mut first))
            .await
            .unwrap();
        let addr = first
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("node {name} did not start: {first:?}"))
            .parse()
            .unwrap();
        Node {
            process,
            pid,
            addr,
            children: Vec::new(),
        }
    }

    /// Records the node's children as they are now, to be stopped with it.
    fn note_children(&mut self) {
        for pid in children_of(self.pid) {
            if !self.children.contains(&pid) {
                self.children.push(pid);
            }
        }
    }

    /// SIGKILL: the node dies without a word, its lease lapses, its children are orphans,
    /// stopped here by their pids.
    async fn kill(&mut self) {
        self.note_children();
        kill_process(Pid::from_raw(self.pid).unwrap(), Signal::KILL).unwrap();
        within(self.process.wait()).await.unwrap();
        for pid in self.children.iter().filter_map(|p| Pid::from_raw(*p)) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }

    /// SIGTERM: the node stops its children and exits; returns whether it exited cleanly.
    async fn stop(&mut self) -> bool {
        self.note_children();
        kill_process(Pid::from_raw(self.pid).unwrap(), Signal::TERM).unwrap();
        within(self.process.wait()).await.unwrap().success()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(pid) = Pid::from_raw(self.pid) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        for pid in self.children.iter().filter_map(|p| Pid::from_raw(*p)) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
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

/// POSTs `message` to `addr` on a connection of its own, in session `session` if given; returns
/// the status, the session id the answer names and the JSON-RPC messages of its body.
async fn post(
    addr: SocketAddr,
    session: Option<&str>,
    message: Value,
) -> (u16, Option<String>, Vec<Value>) {
    let body = message.to_string();
    let session = session
        .map(|id| format!("mcp-session-id: {id}\r\nmcp-protocol-version: 2025-06-18\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: application/json, text/event-stream\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n{session}connection: close\r\n\
         \r\n{body}",
        body.len()
    );
    let mut stream = within(tokio::net::TcpStream::connect(addr)).await.unwrap();
    within(stream.write_all(request.as_bytes())).await.unwrap();
    let mut response = Vec::new();
    within(stream.read_to_end(&mut response)).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head");
    let status = head[9..12].parse().unwrap();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, header("mcp-session-id"), messages(&body))
}

/// A chunked body's content.
fn dechunk(mut body: &str) -> String {
    let mut content = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        content.push_str(&rest[..size]);
        body = &rest[size + 2..];
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
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "gateway-it", "version": "0"},
    });
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params});
    let (status, session, answer) = post(addr, None, init).await;
    assert_eq!(status, 200, "{answer:?}");
    assert!(answer[0]["result"]["serverInfo"].is_object(), "{answer:?}");
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(addr, Some(&session), initialized).await;
    assert_eq!(status, 202);
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
    let (status, _, answer) = post(addr, Some(session), call).await;
    assert_eq!(status, 200, "{answer:?}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holders_session_goes_on_with_a_new_child_on_the_node_that_took_it() {
    let redis = RedisServer::start().expect("redis-server starts");
    let mut a = Node::start(&redis, "a").await;
    let mut b = Node::start(&redis, "b").await;
    let session = open(a.addr).await;
    let old = pid_through(a.addr, &session, 1).await;
    assert_eq!(parent_of(old), Some(a.pid));

    a.kill().await;
    // b finds a's lease lapsed, takes the session over and starts a child with the stored
    // `initialize`: the call is answered by it.
    let new = pid_through(b.addr, &session, 2).await;
    assert_ne!(new, old, "a new child");
    assert_eq!(parent_of(new), Some(b.pid), "the new child is b's");
    // The session goes on, on that child, which read the client's stored `initialize` and
    // `notifications/initialized` before the call.
    assert_eq!(pid_through(b.addr, &session, 3).await, new);
    let received: Vec<String> =
        serde_json::from_str(&call_through(b.addr, &session, 4, "received").await).unwrap();
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
