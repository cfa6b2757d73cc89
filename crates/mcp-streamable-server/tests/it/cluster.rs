//! Several nodes serving one set of sessions (`Config::cluster`), on the in-memory network and
//! its stores: any node serves any request of any session (the request goes to the holder over
//! HTTP/2, its answer relayed), a session whose holder died is taken over by the next node it
//! reaches, and a node whose lease lapsed delivers nothing, removes nothing, and claims again
//! only what nobody took over.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use http::StatusCode;
use mcp_streamable_server::{Config, InMemoryNetwork, Restarted, StreamableHttpService};
use serde_json::{Value, json};

use crate::harness::*;

/// Nodes of one network; each counts the applications it started, and the restarts among them.
struct Nodes {
    network: InMemoryNetwork,
    started: Arc<AtomicUsize>,
    restarted: Arc<AtomicU64>,
}

impl Nodes {
    fn new() -> Nodes {
        Nodes {
            network: InMemoryNetwork::default(),
            started: Arc::default(),
            restarted: Arc::default(),
        }
    }

    fn node(&self, name: &str) -> StreamableHttpService {
        self.node_with(name, Config::default())
    }

    fn node_with(&self, name: &str, config: Config) -> StreamableHttpService {
        let config = config.cluster(self.network.node(name));
        let (started, restarted) = (Arc::clone(&self.started), Arc::clone(&self.restarted));
        service_with(config, move |conn, parts: http::request::Parts| {
            started.fetch_add(1, Ordering::Relaxed);
            if let Some(r) = parts.extensions.get::<Restarted>() {
                restarted.store(r.generation, Ordering::Relaxed);
            }
            crate::app::session(conn, parts)
        })
    }
}

/// Calls `progress` with `arguments` on `node` (id 1), reads its first notification, and lets the
/// stream go: the event id a client cut there holds.
async fn first_event_id(node: &StreamableHttpService, sid: &str, arguments: Value) -> String {
    let response = node
        .handle(request(post(Some(sid)), call(1, "progress", arguments)))
        .await;
    let mut stream = Sse::new(response);
    assert_eq!(label(&message(&stream.next().await.unwrap())), "p1");
    stream.last_event_id().to_owned()
}

fn labels(messages: &[mcp_jsonrpc::Message]) -> Vec<String> {
    messages.iter().map(label).collect()
}

#[tokio::test]
async fn any_node_serves_any_request_of_a_session_held_by_one() {
    let nodes = Nodes::new();
    let (a, b, c) = (nodes.node("a"), nodes.node("b"), nodes.node("c"));
    let sid = initialize(&a, "2025-11-25").await;
    assert_eq!(nodes.network.holder(&sid).as_deref(), Some("a"));
    // A call through b: its progress and result come back through b, in order.
    let answer = call_tool(&b, &sid, 1, "progress", json!({"steps": 5})).await;
    assert_eq!(labels(&answer), ["p1", "p2", "p3", "p4", "p5", "r1"]);
    let answer = call_tool(&c, &sid, 2, "progress", json!({"steps": 2})).await;
    assert_eq!(labels(&answer), ["p1", "p2", "r2"]);
    // The standalone stream read through b gets a broadcast made through c.
    let mut standalone = Sse::new(b.handle(get(&sid, None)).await);
    let answer = call_tool(&c, &sid, 3, "broadcast", json!({"count": 2, "text": "hi"})).await;
    assert_eq!(labels(&answer), ["r3"]);
    let notes = [
        standalone.next().await.unwrap(),
        standalone.next().await.unwrap(),
    ];
    assert_eq!(labels(&messages(&notes)), ["n:notifications/message"; 2]);
    // The application ran once, on a; nothing ran elsewhere.
    assert_eq!(nodes.started.load(Ordering::Relaxed), 1);
    assert_eq!((b.session_count(), c.session_count()), (0, 0));
    // DELETE through c ends the session on a, and b's standalone stream with it.
    let deleted = c.handle(delete(&sid)).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert!(standalone.ends().await);
    assert_eq!(a.session_count(), 0);
    assert_eq!(nodes.network.held(), 0);
    assert!(nodes.network.records().is_empty());
    assert_eq!(nodes.network.events().session_count(), 0);
    let gone = b.handle(request(post(Some(&sid)), ping(4))).await;
    refusal(gone, StatusCode::NOT_FOUND).await;
}

#[tokio::test]
async fn a_stream_relayed_by_another_node_resumes_anywhere() {
    let nodes = Nodes::new();
    let (a, b, c) = (nodes.node("a"), nodes.node("b"), nodes.node("c"));
    let sid = initialize(&a, "2025-11-25").await;
    let response = b
        .handle(request(
            post(Some(&sid)),
            call(1, "progress", json!({"steps": 6, "delay_ms": 20})),
        ))
        .await;
    let mut first = Sse::new(response);
    let read = [first.next().await.unwrap(), first.next().await.unwrap()];
    assert_eq!(labels(&messages(&read)), ["p1", "p2"]);
    let last = first.last_event_id().to_owned();
    drop(first);
    // The client comes back through c with the last id it read: the rest, once each.
    let mut resumed = Sse::new(c.handle(get(&sid, Some(&last))).await);
    let rest = resumed.rest(100).await;
    assert_eq!(labels(&messages(&rest)), ["p3", "p4", "p5", "p6", "r1"]);
    // And an id no node gave out is refused wherever it is named.
    let forged = b.handle(get(&sid, Some("1_999"))).await;
    refusal(forged, StatusCode::BAD_REQUEST).await;
}

#[tokio::test]
async fn a_relayed_stream_gets_keep_alives_from_the_node_relaying_it() {
    use std::time::Duration;
    let nodes = Nodes::new();
    // The holder sends none: whatever comes between the events is b's own.
    let a = nodes.node_with("a", Config::default().keep_alive(None));
    let every = Duration::from_millis(100);
    let b = nodes.node_with("b", Config::default().keep_alive(Some(every)));
    let sid = initialize(&a, "2025-11-25").await;
    let response = b
        .handle(request(
            post(Some(&sid)),
            call(1, "sleep", json!({"ms": 800})),
        ))
        .await;
    let mut relayed = Sse::new(response);
    let mut keep_alives = 0;
    // Bounded: about eight keep-alives and an event or two come, then the end.
    for _ in 0..100 {
        let Some(frame) = relayed.frame_within(Duration::from_secs(5)).await else {
            break;
        };
        if &frame[..] == b": keep-alive\n\n" {
            keep_alives += 1;
        }
    }
    assert!(
        keep_alives >= 2,
        "{keep_alives} keep-alives: {}",
        relayed.raw_text()
    );
    let text = relayed.raw_text();
    assert!(
        text.contains(r#""id":1"#),
        "the answer came after them: {text}"
    );
    assert!(
        text.ends_with("\n\n") && !text.ends_with(": keep-alive\n\n"),
        "{text}"
    );
}

#[tokio::test]
async fn a_dead_holders_session_is_taken_over_and_its_open_requests_answered() {
    let nodes = Nodes::new();
    let (a, b, c) = (nodes.node("a"), nodes.node("b"), nodes.node("c"));
    let sid = initialize(&a, "2025-11-25").await;
    // A request that a would answer in an hour, followed through b.
    let response = b
        .handle(request(
            post(Some(&sid)),
            call(1, "sleep", json!({"ms": 3_600_000})),
        ))
        .await;
    let mut waiting = Sse::new(response);
    nodes.network.kill("a");
    // b learns a died, takes the session over, and answers the request with an error.
    let answer = waiting.rest(10).await;
    assert_eq!(answer.len(), 1, "{answer:?}");
    let mcp_jsonrpc::Message::Response(r) = message(&answer[0]) else {
        panic!("not a response: {answer:?}");
    };
    assert!(r.result().is_err(), "{r:?}");
    assert_eq!(nodes.network.holder(&sid).as_deref(), Some("b"));
    assert_eq!(nodes.restarted.load(Ordering::Relaxed), 1);
    // The session goes on, through any node, on its new holder.
    let answer = call_tool(&c, &sid, 2, "progress", json!({"steps": 2})).await;
    assert_eq!(labels(&answer), ["p1", "p2", "r2"]);
    assert_eq!(b.session_count(), 1);
    // New sessions start anywhere.
    let other = initialize(&c, "2025-11-25").await;
    let answer = call_tool(&b, &other, 1, "progress", json!({"steps": 1})).await;
    assert_eq!(labels(&answer), ["p1", "r1"]);
}

#[tokio::test]
async fn a_request_for_a_dead_holders_session_takes_it_over() {
    let nodes = Nodes::new();
    let (a, b) = (nodes.node("a"), nodes.node("b"));
    let sid = initialize(&a, "2025-03-26").await;
    nodes.network.kill("a");
    let answer = call_tool(&b, &sid, 7, "progress", json!({"steps": 1})).await;
    assert_eq!(labels(&answer), ["p1", "r7"]);
    assert_eq!(nodes.network.holder(&sid).as_deref(), Some("b"));
    assert_eq!(nodes.started.load(Ordering::Relaxed), 2);
    assert_eq!(nodes.restarted.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_servers_request_is_answered_through_any_node() {
    let nodes = Nodes::new();
    let (a, b, c) = (nodes.node("a"), nodes.node("b"), nodes.node("c"));
    let sid = initialize(&a, "2025-11-25").await;
    let response = b
        .handle(request(post(Some(&sid)), call(1, "ask", json!({}))))
        .await;
    let mut stream = Sse::new(response);
    let ask = message(&stream.next().await.unwrap());
    let mcp_jsonrpc::Message::Request(ask) = ask else {
        panic!("not a request: {ask:?}");
    };
    assert_eq!(ask.method, "sampling/createMessage");
    // The client's answer reaches the holder through c.
    let answer = json!({"jsonrpc": "2.0", "id": ask.id, "result": {"ok": 1}}).to_string();
    let posted = c.handle(request(post(Some(&sid)), answer)).await;
    assert_eq!(posted.status(), StatusCode::ACCEPTED);
    let rest = messages(&stream.rest(10).await);
    assert_eq!(labels(&rest), ["r1"]);
    assert_eq!(result_of(&rest[0])["client said"], "{\"ok\":1}");
}

#[tokio::test]
async fn a_second_standalone_stream_on_another_node_takes_over() {
    let nodes = Nodes::new();
    let (a, b, c) = (nodes.node("a"), nodes.node("b"), nodes.node("c"));
    let sid = initialize(&a, "2025-11-25").await;
    let mut first = Sse::new(b.handle(get(&sid, None)).await);
    let mut second = Sse::new(c.handle(get(&sid, None)).await);
    // S12: the first ends; what is broadcast goes to the second.
    assert!(first.ends().await);
    call_tool(&a, &sid, 1, "broadcast", json!({"text": "one"})).await;
    let note = message(&second.next().await.unwrap());
    assert_eq!(params_of(&note)["data"], "one");
    // A GET on the holder itself takes it over from c in turn.
    let mut third = Sse::new(a.handle(get(&sid, None)).await);
    assert!(second.ends().await);
    call_tool(&b, &sid, 2, "broadcast", json!({"text": "two"})).await;
    let note = message(&third.next().await.unwrap());
    assert_eq!(params_of(&note)["data"], "two");
}

#[tokio::test]
async fn per_request_posts_need_no_holder() {
    let nodes = Nodes::new();
    let (a, b) = (nodes.node("a"), nodes.node("b"));
    nodes.network.kill("a");
    // 2026-07-28: no session, nothing forwarded: served where it lands, even on a node the
    // others take for dead.
    for node in [&a, &b] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }}});
        let response = node
            .handle(request(
                post(None)
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "ping"),
                body.to_string(),
            ))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    assert_eq!(nodes.network.held(), 0);
}

#[tokio::test]
async fn a_node_shutting_down_hands_its_sessions_over() {
    let nodes = Nodes::new();
    let (a, b) = (nodes.node("a"), nodes.node("b"));
    let sid = initialize(&a, "2025-11-25").await;
    let mut standalone = Sse::new(b.handle(get(&sid, None)).await);
    a.shutdown(std::time::Duration::from_secs(1)).await;
    // The standalone stream relayed by b ends with it; the session is not over.
    assert!(standalone.ends().await);
    assert!(!nodes.network.records().is_empty());
    let answer = call_tool(&b, &sid, 1, "progress", json!({"steps": 1})).await;
    assert_eq!(labels(&answer), ["p1", "r1"]);
    assert_eq!(nodes.network.holder(&sid).as_deref(), Some("b"));
    assert_eq!(nodes.restarted.load(Ordering::Relaxed), 1);
}

/// N8: a node whose lease lapsed (paused past it) and whose session another node took over
/// meanwhile: its stale copy delivers nothing, removes nothing when it ends, and steps down once
/// the node is back; what reaches it goes to the live holder.
#[tokio::test]
async fn a_lapsed_nodes_stale_copy_delivers_and_removes_nothing() {
    let nodes = Nodes::new();
    let (a, b) = (nodes.node("a"), nodes.node("b"));
    let sid = initialize(&a, "2025-11-25").await;
    nodes.network.lapse("a");
    // b takes the session over: the application starts again there.
    let answer = call_tool(&b, &sid, 1, "progress", json!({"steps": 1})).await;
    assert_eq!(labels(&answer), ["p1", "r1"]);
    assert_eq!(nodes.network.holder(&sid).as_deref(), Some("b"));
    // Reaching a before it is back: a cannot prove its lease, so the request goes to b.
    let answer = call_tool(&a, &sid, 2, "progress", json!({"steps": 1})).await;
    assert_eq!(labels(&answer), ["p1", "r2"]);
    assert_eq!(
        nodes.started.load(Ordering::Relaxed),
        2,
        "nothing ran on a's copy"
    );
    // Back as a new incarnation, a claims nothing and ends its copy, removing nothing.
    nodes.network.renew("a");
    for _ in 0..500 {
        if a.session_count() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(a.session_count(), 0);
    assert!(!nodes.network.records().is_empty());
    let answer = call_tool(&a, &sid, 3, "progress", json!({"steps": 1})).await;
    assert_eq!(labels(&answer), ["p1", "r3"]);
    assert_eq!(nodes.started.load(Ordering::Relaxed), 2);
}

/// N8: a node whose lease lapsed and came back before anyone needed its sessions claims them
/// again: same application, same session, nothing restarted.
#[tokio::test]
async fn a_node_back_from_a_lapse_keeps_what_nobody_took() {
    let nodes = Nodes::new();
    let (a, b) = (nodes.node("a"), nodes.node("b"));
    let sid = initialize(&a, "2025-11-25").await;
    nodes.network.lapse("a");
    nodes.network.renew("a");
    // Through a first: it waits for its claim; b may not take the session over meanwhile.
    for id in 1..=3 {
        let node = if id % 2 == 1 { &a } else { &b };
        let answer = call_tool(node, &sid, id, "progress", json!({"steps": 1})).await;
        assert_eq!(labels(&answer), ["p1", &format!("r{id}")]);
    }
    assert_eq!(nodes.network.holder(&sid).as_deref(), Some("a"));
    assert_eq!(nodes.started.load(Ordering::Relaxed), 1);
    assert_eq!(nodes.restarted.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_stream_of_a_dead_holder_resumed_on_another_node_ends_with_its_error() {
    let nodes = Nodes::new();
    let (a, b) = (nodes.node("a"), nodes.node("b"));
    let sid = initialize(&a, "2025-11-25").await;
    // The call runs on a itself; one notification, then an hour's wait.
    let last = first_event_id(&a, &sid, json!({"steps": 2, "delay_ms": 3_600_000})).await;
    nodes.network.kill("a");
    let mut resumed = Sse::new(b.handle(get(&sid, Some(&last))).await);
    let rest = messages(&resumed.rest(10).await);
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert!(matches!(&rest[0], mcp_jsonrpc::Message::Response(r) if r.result().is_err()));
}

#[tokio::test]
async fn a_request_waiting_out_an_unreachable_holder_takes_over_once_it_is_killed() {
    let nodes = Nodes::new();
    // a serves its peers on a runtime of its own: shut down, a is out of their reach while the
    // records still say it lives, as a process is between its kill and its lease's end.
    let peers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let a = {
        let _on = peers.enter();
        nodes.node("a")
    };
    let b = nodes.node("b");
    let sid = initialize(&a, "2025-11-25").await;
    peers.shutdown_background();
    // b finds a out of reach, and waits for its lease to lapse.
    let asked = {
        let sid = sid.clone();
        tokio::spawn(async move { call_tool(&b, &sid, 7, "progress", json!({"steps": 1})).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    nodes.network.kill("a");
    // Its lease lapsed at once: the waiting request takes the session over, and is answered.
    let answer = tokio::time::timeout(std::time::Duration::from_secs(10), asked)
        .await
        .expect("answered once its holder's lease lapsed")
        .unwrap();
    assert_eq!(labels(&answer), ["p1", "r7"]);
    assert_eq!(nodes.network.holder(&sid).as_deref(), Some("b"));
    assert_eq!(nodes.restarted.load(Ordering::Relaxed), 1);
}
