//! Three nodes of the echo server behind a round-robin proxy without session affinity: every
//! request of a session may land on any node. Each node runs on a runtime of its own, so that
//! killing one (shutting its runtime down at once, its tasks and sockets with it) is what
//! `kill -9` does to a process.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_streamable_http::client::{Client, ClientSender};
use mcp_streamable_http::jsonrpc::{Message, Notification, Request, Response, to_raw_value};
use mcp_streamable_http::server::{Config, StreamableHttpService};
use mcp_streamable_http::transport::{Connection, Sender, Transport};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use mcp_streamable_redis::testing::{RedisCluster, RedisServer};
use mcp_streamable_redis::{Options, RedisBackend};

use support::echo_app;
use support::proxy::RoundRobin;
use support::serve;

/// How long a test waits for what should come. Generous: it only bounds a broken test.
const WAIT: Duration = Duration::from_secs(30);

/// One node: the echo server on a runtime of its own.
pub(crate) struct Node {
    pub(crate) addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    /// What else dies with the node (the in-memory network's view of it).
    on_kill: Option<Box<dyn FnOnce() + Send>>,
}

impl Node {
    /// Starts a node serving with the config `config` makes on the node's runtime.
    pub(crate) fn start(config: impl Future<Output = Config> + Send + 'static) -> Node {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let service = StreamableHttpService::new(config.await, echo_app::session);
            let _ = serve::run(listener, service, std::future::pending()).await;
        });
        let addr = rx.recv_timeout(WAIT).expect("the node listens");
        Node {
            addr,
            runtime: Some(runtime),
            on_kill: None,
        }
    }

    /// Ends the node at once, as `kill -9` would: no task of it runs again.
    pub(crate) fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        if let Some(on_kill) = self.on_kill.take() {
            on_kill();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One client session through the proxy: its sender, and the notifications it receives.
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) sender: ClientSender,
    notes: mpsc::UnboundedReceiver<Notification>,
    reader: tokio::task::JoinHandle<()>,
}

impl Session {
    pub(crate) async fn start(url: &str) -> Session {
        let mut conn = Client::builder(url)
            .build()
            .unwrap()
            .connect()
            .await
            .unwrap();
        let sender = conn.sender();
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "nodes", "version": "0"}});
        let init = Request::new(0, "initialize", to_raw_value(&params).ok());
        let answer = sender.call(init, WAIT).await.expect("initialize answered");
        assert!(!answer.is_error(), "{answer:?}");
        let id = conn.session_id().expect("a session id");
        let (tx, notes) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            while let Ok(Some(message)) = conn.recv().await {
                if let Message::Notification(note) = message {
                    let _ = tx.send(note);
                }
            }
        });
        let initialized = Notification::new("notifications/initialized", None);
        sender.send(initialized.into()).await.unwrap();
        Session {
            id,
            sender,
            notes,
            reader,
        }
    }

    /// The notifications received so far, without waiting.
    pub(crate) fn received(&mut self) -> Vec<Notification> {
        std::iter::from_fn(|| self.notes.try_recv().ok()).collect()
    }

    pub(crate) async fn call(&self, id: i64, tool: &str, arguments: Value) -> Response {
        let mut params = json!({"name": tool, "arguments": arguments});
        params["_meta"] = json!({"progressToken": format!("t{id}")});
        let request = Request::new(id, "tools/call", to_raw_value(&params).ok());
        let answer = self.sender.call(request, WAIT).await;
        answer.unwrap_or_else(|e| panic!("session {}: no answer to {id} ({tool}): {e}", self.id))
    }

    /// The next `n` notifications.
    pub(crate) async fn notes(&mut self, n: usize) -> Vec<Notification> {
        let mut notes = Vec::with_capacity(n);
        for _ in 0..n {
            let note = tokio::time::timeout(WAIT, self.notes.recv())
                .await
                .expect("a notification in time")
                .expect("the session is on");
            notes.push(note);
        }
        notes
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn params(note: &Notification) -> Value {
    note.parse_params::<Value>().unwrap()
}

fn text_of(answer: &Response) -> String {
    let result: Value = serde_json::from_str(answer.result().expect("a result").get()).unwrap();
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// `sessions` sessions, each doing `rounds` progress calls and broadcasts through `url`:
/// every progress notification, result and broadcast arrives exactly once and in order.
pub(crate) async fn progress_and_broadcasts(url: &str, sessions: usize, rounds: i64) {
    let mut tasks = Vec::new();
    for s in 0..sessions {
        let url = url.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut session = Session::start(&url).await;
            for round in 1..=rounds {
                let id = round * 2;
                let answer = session.call(id, "progress", json!({"steps": 3})).await;
                assert_eq!(text_of(&answer), "done", "session {s} round {round}");
                let text = format!("s{s}-b{round}");
                let sent = session
                    .call(id + 1, "broadcast", json!({"text": text}))
                    .await;
                assert_eq!(text_of(&sent), "sent");
                let notes = session.notes(4).await;
                let mut seen = HashMap::<String, Vec<u64>>::new();
                let mut broadcasts = Vec::new();
                for note in &notes {
                    let p = params(note);
                    match note.method.as_str() {
                        "notifications/progress" => seen
                            .entry(p["progressToken"].as_str().unwrap().to_owned())
                            .or_default()
                            .push(p["progress"].as_u64().unwrap()),
                        "notifications/message" => {
                            broadcasts.push(p["data"].as_str().unwrap().to_owned());
                        }
                        other => panic!("unexpected {other}"),
                    }
                }
                assert_eq!(seen[&format!("t{id}")], [1, 2, 3], "session {s}: {notes:?}");
                assert_eq!(broadcasts, [text], "session {s}");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// What every node of these tests has: no keep-alive comments, so that a follower that misses
/// a write shows as a hang the test catches, not as a 15 s delay.
fn nodes_config() -> Config {
    Config::default().keep_alive(None)
}

/// Three nodes on the in-memory network and stores (the backend-free check of the wiring the
/// Redis tests run), each killed with the network's view of it.
fn in_memory_nodes() -> (
    Vec<(String, Node)>,
    mcp_streamable_http::server::InMemoryNetwork,
) {
    use mcp_streamable_http::server::InMemoryNetwork;
    let network = InMemoryNetwork::default();
    let nodes = ["a", "b", "c"]
        .into_iter()
        .map(|name| {
            let config = nodes_config().cluster(network.node(name));
            let mut node = Node::start(async move { config });
            let network = network.clone();
            node.on_kill = Some(Box::new(move || network.kill(name)));
            (name.to_owned(), node)
        })
        .collect();
    (nodes, network)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_without_affinity_serve_every_session() {
    let (nodes, _) = in_memory_nodes();
    let (proxy, addr) = RoundRobin::start(nodes.iter().map(|(_, n)| n.addr).collect()).await;
    progress_and_broadcasts(&format!("http://{addr}/mcp"), 32, 3).await;
    for (name, node) in &nodes {
        assert!(proxy.passed(node.addr) > 100, "node {name} served requests");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_nodes_sessions_go_on_through_the_others() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let (nodes, network) = in_memory_nodes();
    failover(nodes, move |session| network.holder(session)).await;
}

/// Sessions mid-call when the holder of the first is killed: the calls it held end with the
/// dead holder's error, the others with their result; every progress notification arrives
/// once and in order; then every session, and new ones, go on.
pub(crate) async fn failover(
    mut nodes: Vec<(String, Node)>,
    holder: impl Fn(&str) -> Option<String>,
) {
    let (proxy, addr) = RoundRobin::start(nodes.iter().map(|(_, n)| n.addr).collect()).await;
    let url = format!("http://{addr}/mcp");
    let mut sessions = Vec::new();
    for _ in 0..9 {
        sessions.push(Session::start(&url).await);
        // A session's start takes three requests, as many as there are nodes: without a skip,
        // every session would start on the same node.
        proxy.skip();
    }
    let victim = holder(&sessions[0].id).expect("a holder");
    let doomed: Vec<bool> = sessions
        .iter()
        .map(|s| holder(&s.id).as_deref() == Some(victim.as_str()))
        .collect();
    assert!(
        doomed.contains(&false),
        "some sessions held by nodes that live"
    );
    let sessions: Vec<Arc<tokio::sync::Mutex<Session>>> = sessions
        .into_iter()
        .map(|s| Arc::new(tokio::sync::Mutex::new(s)))
        .collect();
    let calls: Vec<_> = sessions
        .iter()
        .map(|s| {
            let s = Arc::clone(s);
            tokio::spawn(async move {
                let session = s.lock().await;
                let steps = json!({"steps": 40, "delay_ms": 25});
                session.call(1, "progress", steps).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, node) = nodes.iter_mut().find(|(n, _)| *n == victim).unwrap();
    proxy.remove(node.addr);
    node.kill();
    for ((call, session), doomed) in calls.into_iter().zip(&sessions).zip(&doomed) {
        let answer = call.await.unwrap();
        let mut session = session.lock().await;
        // The answer reaches its caller at once; the notifications before it, through the
        // session's reader task: a call that ran to its end waits for all of them.
        let notes = if *doomed {
            session.received()
        } else {
            session.notes(40).await
        };
        let progress: Vec<u64> = notes
            .iter()
            .filter(|n| n.method == "notifications/progress")
            .map(|n| params(n)["progress"].as_u64().unwrap())
            .collect();
        let expected: Vec<u64> = (1..=progress.len() as u64).collect();
        assert_eq!(progress, expected, "once each, in order");
        if *doomed {
            let error = answer.result().expect_err("the dead holder's call failed");
            assert!(
                error.message.contains("stopped before answering"),
                "{error:?}"
            );
            assert!(progress.len() < 40);
        } else {
            assert_eq!(text_of(&answer), "done");
            assert_eq!(progress.len(), 40);
        }
    }
    for session in &sessions {
        let session = session.lock().await;
        let answer = session.call(2, "progress", json!({"steps": 2})).await;
        assert_eq!(text_of(&answer), "done");
        assert_ne!(holder(&session.id).as_deref(), Some(victim.as_str()));
    }
    let fresh = Session::start(&url).await;
    assert_eq!(
        text_of(&fresh.call(1, "echo", json!({"text": "hi"})).await),
        "hi"
    );
}

/// Three nodes sharing `redis`, each with its own backend (two connections), killed with its
/// runtime: its lease then lapses, as a killed process's does.
fn redis_nodes(redis: &RedisServer) -> Vec<(String, Node)> {
    ["a", "b", "c"]
        .into_iter()
        .map(|name| {
            let url = redis.url();
            let node = Node::start(async move {
                let options = Options::default().node(name);
                let backend = RedisBackend::connect(&url, options).await.unwrap();
                nodes_config().cluster(backend.cluster())
            });
            (name.to_owned(), node)
        })
        .collect()
}

/// The node holding `session`, as Redis says.
fn redis_holder(redis: &RedisServer, session: &str) -> Option<String> {
    let key = format!("mcp:{{{session}}}");
    let node = redis_cli(redis, &["HGET", &key, "node"]).trim().to_owned();
    (!node.is_empty()).then_some(node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_on_redis_serve_every_session() {
    let redis = RedisServer::start().expect("redis-server starts");
    let nodes = redis_nodes(&redis);
    let (proxy, addr) = RoundRobin::start(nodes.iter().map(|(_, n)| n.addr).collect()).await;
    progress_and_broadcasts(&format!("http://{addr}/mcp"), 32, 3).await;
    for (name, node) in &nodes {
        assert!(proxy.passed(node.addr) > 100, "node {name} served requests");
    }
}

/// The same on a Redis Cluster of three masters: every session's keys in a slot of their own,
/// the membership in one of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_on_a_redis_cluster_serve_every_session() {
    let cluster = RedisCluster::start().expect("a Redis Cluster starts");
    let urls = cluster.urls();
    let nodes: Vec<(String, Node)> = ["a", "b", "c"]
        .into_iter()
        .map(|name| {
            let urls = urls.clone();
            let node = Node::start(async move {
                let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
                let options = Options::default().node(name);
                let backend = RedisBackend::connect_cluster(&urls, options).await.unwrap();
                nodes_config().cluster(backend.cluster())
            });
            (name.to_owned(), node)
        })
        .collect();
    let (proxy, addr) = RoundRobin::start(nodes.iter().map(|(_, n)| n.addr).collect()).await;
    progress_and_broadcasts(&format!("http://{addr}/mcp"), 16, 3).await;
    for (name, node) in &nodes {
        assert!(proxy.passed(node.addr) > 50, "node {name} served requests");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_on_redis_hands_its_sessions_to_the_others() {
    let redis = RedisServer::start().expect("redis-server starts");
    let nodes = redis_nodes(&redis);
    failover(nodes, |session| redis_holder(&redis, session)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_is_away_requests_fail_fast_with_503_and_service_resumes_after() {
    let mut redis = RedisServer::start().expect("redis-server starts");
    let nodes = redis_nodes(&redis);
    let (_proxy, addr) = RoundRobin::start(nodes.iter().map(|(_, n)| n.addr).collect()).await;
    let url = format!("http://{addr}/mcp");
    let before = Session::start(&url).await;
    redis.stop();
    // Nothing can start a session, on any node, and the refusal says why, at once.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    for _ in 0..3 {
        let (status, body) = raw(addr, "POST", "", &init).await;
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("unavailable"), "{body}");
    }
    redis.restart().expect("redis-server restarts");
    // The nodes register again by themselves, within a third of a lease; each node's command
    // connection comes back after its first command fails (503, at once).
    let mut back = false;
    for _ in 0..200 {
        let members = redis_cli(&redis, &["HLEN", "mcp:{m}:members"]);
        if members.trim() == "3" {
            let (status, _) = raw(addr, "POST", "", &init).await;
            let (second, _) = raw(addr, "POST", "", &init).await;
            let (third, _) = raw(addr, "POST", "", &init).await;
            if [status, second, third] == [200; 3] {
                back = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(back, "service did not resume");
    // Service resumes by itself: new sessions, their calls through every node, their end.
    let after = Session::start(&url).await;
    for id in 1..=6 {
        let answer = after.call(id, "echo", json!({"text": "back"})).await;
        assert_eq!(text_of(&answer), "back");
    }
    // A session started before is gone with Redis's memory (this one kept nothing on disk):
    // its requests are answered, on its holder or as an unknown session elsewhere, not hung.
    for id in 1..=6 {
        let request = Request::new(id, "ping", None);
        let answered = tokio::time::timeout(WAIT, before.sender.call(request, WAIT)).await;
        assert!(answered.is_ok(), "request {id} of the old session hung");
    }
    // Nothing of a deleted session is left in Redis, and what the nodes keep there is their
    // membership; the old session's holder wrote nothing back (the store refuses it: it holds
    // nothing any more). The sessions started to see service back, nobody ended: left aside.
    let (status, _) = raw(
        addr,
        "DELETE",
        &format!("mcp-session-id: {}\r\n", after.id),
        "",
    )
    .await;
    assert_eq!(status, 204);
    let keys = redis_cli(&redis, &["--scan", "--pattern", "mcp:*"]);
    let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
    assert!(!keys.iter().any(|k| k.contains(&after.id)), "{keys:?}");
    assert!(!keys.iter().any(|k| k.contains(&before.id)), "{keys:?}");
    for kept in ["mcp:{m}:members", "mcp:{m}:up", "mcp:{m}:secret"] {
        assert!(keys.contains(&kept), "{keys:?}");
    }
}

fn redis_cli(redis: &RedisServer, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port().to_string()])
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8(out.stdout).unwrap()
}

/// One request written by hand to `addr`, `extra` headers included: its status and whole
/// response.
async fn raw(addr: SocketAddr, method: &str, extra: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!(
        "{method} /mcp HTTP/1.1\r\nhost: {addr}\r\naccept: application/json, \
         text/event-stream\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         {extra}connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut response))
        .await
        .expect("an answer in time")
        .unwrap();
    (response[9..12].parse().unwrap(), response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_by_its_holders_death_resumes_on_another_node_with_its_error() {
    let redis = RedisServer::start().expect("redis-server starts");
    let mut nodes = redis_nodes(&redis);
    let (a, b) = (nodes[0].1.addr, nodes[1].1.addr);
    // The session and its call on a, directly: a holds it and writes the stream itself.
    let session = Session::start(&format!("http://{a}/mcp")).await;
    let slow = json!({"name": "progress", "arguments": {"steps": 2, "delay_ms": 600_000},
        "_meta": {"progressToken": "t"}});
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": slow});
    let extra = format!(
        "mcp-session-id: {}\r\nmcp-protocol-version: 2025-11-25\r\n",
        session.id
    );
    let cut = tokio::spawn(async move { raw(a, "POST", &extra, &body.to_string()).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    nodes[0].1.kill();
    let (_, first) = cut.await.unwrap();
    let last = first
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .next_back()
        .expect("an event id before the cut")
        .to_owned();
    let extra = format!(
        "mcp-session-id: {}\r\nmcp-protocol-version: 2025-11-25\r\nlast-event-id: {last}\r\n",
        session.id
    );
    let (status, resumed) = raw(b, "GET", &extra, "").await;
    assert_eq!(status, 200, "{resumed}");
    assert!(resumed.contains("stopped before answering"), "{resumed}");
}
