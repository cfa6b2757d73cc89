//! Several nodes serving one set of sessions (`Config::cluster`), on the in-memory network and
//! stores: any node serves any request of any session, and a session whose holder died is taken
//! over by the next node it reaches.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use http::StatusCode;
use mcp_streamable_server::{
    Config, InMemoryEventStore, InMemoryNetwork, InMemorySessionStore, Restarted,
    StreamableHttpService,
};
use serde_json::{Value, json};

use crate::harness::*;

/// Nodes of one network, sharing stores; each counts the applications it started, and the
/// restarts among them.
struct Nodes {
    network: InMemoryNetwork,
    events: InMemoryEventStore,
    records: InMemorySessionStore,
    started: Arc<AtomicUsize>,
    restarted: Arc<AtomicU64>,
}

impl Nodes {
    fn new() -> Nodes {
        Nodes {
            network: InMemoryNetwork::default(),
            events: InMemoryEventStore::default(),
            records: InMemorySessionStore::default(),
            started: Arc::default(),
            restarted: Arc::default(),
        }
    }

    fn node(&self, name: &str) -> StreamableHttpService {
        let config = Config::default()
            .event_store(self.events.clone())
            .session_store(self.records.clone())
            .cluster(self.network.node(name));
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
    assert!(nodes.records.is_empty());
    assert_eq!(nodes.events.session_count(), 0);
    let gone = b.handle(request(post(Some(&sid)), ping(4))).await;
    refusal(gone, StatusCode::NOT_FOUND).await;
}

#[tokio::test]
async fn a_stream_followed_on_another_node_resumes_anywhere() {
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
    // The standalone stream followed on b ends with it; the session is not over.
    assert!(standalone.ends().await);
    assert!(!nodes.records.is_empty());
    let answer = call_tool(&b, &sid, 1, "progress", json!({"steps": 1})).await;
    assert_eq!(labels(&answer), ["p1", "r1"]);
    assert_eq!(nodes.network.holder(&sid).as_deref(), Some("b"));
    assert_eq!(nodes.restarted.load(Ordering::Relaxed), 1);
}

/// The in-memory store, refusing appends with `NotHolder` once fenced, as a shared store does
/// to a node whose session another node took over.
#[derive(Clone, Default)]
struct Fenced {
    inner: InMemoryEventStore,
    fenced: Arc<std::sync::atomic::AtomicBool>,
}

impl mcp_streamable_server::EventStore for Fenced {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        index: u64,
        message: bytes::Bytes,
    ) -> mcp_streamable_server::StoreFuture<'a, Result<(), mcp_streamable_server::StoreError>> {
        if self.fenced.load(Ordering::Relaxed) {
            return Box::pin(std::future::ready(Err(
                mcp_streamable_server::NotHolder.into()
            )));
        }
        self.inner.append(session, stream, index, message)
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> mcp_streamable_server::StoreFuture<
        'a,
        Result<Vec<mcp_streamable_server::StoredEvent>, mcp_streamable_server::ReplayError>,
    > {
        self.inner.replay_after(session, stream, after)
    }

    fn stream_finished<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
    ) -> mcp_streamable_server::StoreFuture<'a, ()> {
        self.inner.stream_finished(session, stream)
    }

    fn session_closed<'a>(
        &'a self,
        session: &'a str,
    ) -> mcp_streamable_server::StoreFuture<'a, ()> {
        self.inner.session_closed(session)
    }
}

#[tokio::test]
async fn a_node_told_it_no_longer_holds_a_session_ends_its_copy() {
    let nodes = Nodes::new();
    let events = Fenced::default();
    let config = Config::default()
        .event_store(events.clone())
        .session_store(nodes.records.clone())
        .cluster(nodes.network.node("a"));
    let a = service(config);
    let sid = initialize(&a, "2025-11-25").await;
    events.fenced.store(true, Ordering::Relaxed);
    let response = a.handle(request(post(Some(&sid)), ping(1))).await;
    let _ = sse_events(response, 10).await;
    // Its copy is gone from this node; the shared record is the holder's to keep.
    assert_eq!(a.session_count(), 0);
    assert!(!nodes.records.is_empty());
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
async fn an_id_its_holder_sent_before_storing_it_resumes_on_another_node() {
    let nodes = Nodes::new();
    let (a, b) = (nodes.node("a"), nodes.node("b"));
    let sid = initialize(&a, "2025-11-25").await;
    let last = first_event_id(&a, &sid, json!({"steps": 3, "delay_ms": 50})).await;
    // An id one past what the store has, as a client holds when its holder sent an event and
    // died before storing it: on another node it is followed, not refused.
    let (stream_no, index) = last.split_once('_').unwrap();
    let ahead = format!("{stream_no}_{}", index.parse::<u64>().unwrap() + 1);
    let mut resumed = Sse::new(b.handle(get(&sid, Some(&ahead))).await);
    let rest = messages(&resumed.rest(10).await);
    assert_eq!(labels(&rest), ["p3", "r1"]);
}
