//! Three nodes of the echo server behind a round-robin proxy without session affinity: every
//! request of a session may land on any node. Each node runs on a runtime of its own, so that
//! killing one (shutting its runtime down at once, its tasks and sockets with it) is what
//! `kill -9` does to a process.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_streamable_http::client::{Client, ClientSender};
use mcp_streamable_http::jsonrpc::{Message, Notification, Request, Response, to_raw_value};
use mcp_streamable_http::server::{Config, StreamableHttpService};
use mcp_streamable_http::transport::{Connection, Sender, Transport};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::echo_app;
use crate::proxy::RoundRobin;
use crate::serve;

/// How long a test waits for what should come. Generous: it only bounds a broken test.
const WAIT: Duration = Duration::from_secs(30);

/// One node: the echo server on a runtime of its own.
pub(crate) struct Node {
    pub(crate) addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Node {
    /// Starts a node serving with the config `config` makes on the node's runtime.
    pub(crate) fn start(config: impl FnOnce() -> Config + Send + 'static) -> Node {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let service = StreamableHttpService::new(config(), echo_app::session);
            let _ = serve::run(listener, service, std::future::pending()).await;
        });
        let addr = rx.recv_timeout(WAIT).expect("the node listens");
        Node {
            addr,
            runtime: Some(runtime),
        }
    }

    /// Ends the node at once, as `kill -9` would: no task of it runs again.
    pub(crate) fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
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
        let (tx, notes) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            while let Ok(Some(message)) = conn.recv().await {
                if let Message::Notification(note) = message {
                    let _ = tx.send(note);
                }
            }
        });
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "nodes", "version": "0"}});
        let init = Request::new(0, "initialize", to_raw_value(&params).ok());
        let answer = sender.call(init, WAIT).await.expect("initialize answered");
        assert!(!answer.is_error(), "{answer:?}");
        let initialized = Notification::new("notifications/initialized", None);
        sender.send(initialized.into()).await.unwrap();
        Session {
            sender,
            notes,
            reader,
        }
    }

    pub(crate) async fn call(&self, id: i64, tool: &str, arguments: Value) -> Response {
        let mut params = json!({"name": tool, "arguments": arguments});
        params["_meta"] = json!({"progressToken": format!("t{id}")});
        let request = Request::new(id, "tools/call", to_raw_value(&params).ok());
        self.sender.call(request, WAIT).await.expect("an answer")
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

/// The nodes' configs, sharing one in-memory network and stores: the backend-free check of
/// the same wiring the Redis test runs.
fn in_memory() -> impl Fn(&str) -> Config {
    use mcp_streamable_http::server::{InMemoryEventStore, InMemoryNetwork, InMemorySessionStore};
    let network = InMemoryNetwork::default();
    let events = InMemoryEventStore::default();
    let records = InMemorySessionStore::default();
    move |name: &str| {
        nodes_config()
            .event_store(events.clone())
            .session_store(records.clone())
            .cluster(network.node(name))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_without_affinity_serve_every_session() {
    let config = Arc::new(in_memory());
    let nodes: Vec<Node> = ["a", "b", "c"]
        .into_iter()
        .map(|name| {
            let config = Arc::clone(&config);
            Node::start(move || config(name))
        })
        .collect();
    let (proxy, addr) = RoundRobin::start(nodes.iter().map(|n| n.addr).collect()).await;
    progress_and_broadcasts(&format!("http://{addr}/mcp"), 32, 3).await;
    for node in &nodes {
        assert!(proxy.passed(node.addr) > 100, "every node served requests");
    }
}
