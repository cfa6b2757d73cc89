//! L1-L4: listen streams (`subscriptions/listen`) served by `Subscriptions`, and changes carried
//! between nodes by a `NotificationBus`.

use std::time::Duration;

use http::StatusCode;
use mcp_jsonrpc::{Id, Message};
use mcp_streamable_server::{
    Change, Config, Heard, InMemoryBus, NotificationBus, ServerConnection, StreamableHttpService,
    Subscriptions, Supported,
};
use mcp_transport::Connection;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::harness::*;
use crate::modern_app::*;

/// A node whose application serves listen requests with `subscriptions`.
fn node(subscriptions: &Subscriptions) -> StreamableHttpService {
    let subscriptions = subscriptions.clone();
    service_with(Config::default(), move |conn, _parts| {
        listen_app(conn, subscriptions.clone())
    })
}

async fn listen_app(mut conn: ServerConnection, subscriptions: Subscriptions) {
    if let Ok(Some(Message::Request(request))) = conn.recv().await {
        assert_eq!(request.method, "subscriptions/listen");
        subscriptions.serve(&mut conn, &request).await;
    }
}

/// Opens a listen stream with `filter` (`params.notifications`).
async fn listen(node: &StreamableHttpService, id: i64, filter: Value) -> Sse {
    let params = json!({"notifications": filter});
    let request = request(
        modern("subscriptions/listen"),
        body(id, "subscriptions/listen", params),
    );
    Sse::new(node.handle(request).await)
}

/// The next message of `sse`, as JSON.
async fn next(sse: &mut Sse) -> Value {
    let event = sse.next().await.expect("a message on the listen stream");
    serde_json::from_str(&event.data).unwrap()
}

fn subscription_of(message: &Value) -> &Value {
    &message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
}

/// Waits, bounded, until `subscriptions` has `count` streams open.
async fn until_listening(subscriptions: &Subscriptions, count: usize) {
    for _ in 0..200 {
        if subscriptions.listening() == count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} streams open, not {count}", subscriptions.listening());
}

#[tokio::test]
async fn l1_the_acknowledgement_comes_first_with_the_types_agreed() {
    let mut supported = Supported::default();
    supported.prompts_list_changed = false;
    let subscriptions = Subscriptions::new(InMemoryBus::default()).supporting(supported);
    let node = node(&subscriptions);
    let filter = json!({"toolsListChanged": true, "promptsListChanged": true,
        "resourceSubscriptions": ["file:///a"]});
    let mut sse = listen(&node, 7, filter).await;
    let ack = next(&mut sse).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(subscription_of(&ack), &json!(7));
    // Prompts are not supported here, so they are not agreed.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
    );
}

#[tokio::test]
async fn l2_a_change_on_one_node_reaches_the_streams_of_every_node_that_asked_for_it() {
    let bus = InMemoryBus::default();
    let (one, two) = (
        Subscriptions::new(bus.clone()),
        Subscriptions::new(bus.clone()),
    );
    let (node_one, node_two) = (node(&one), node(&two));
    let mut tools = listen(&node_one, 1, json!({"toolsListChanged": true})).await;
    let filter = json!({"promptsListChanged": true, "resourceSubscriptions": ["file:///a"]});
    let mut prompts = listen(&node_two, 2, filter).await;
    for sse in [&mut tools, &mut prompts] {
        assert_eq!(
            next(sse).await["method"],
            "notifications/subscriptions/acknowledged"
        );
    }
    // Announced on the second node, in this order.
    for change in [
        Change::ResourceUpdated("file:///b".into()),
        Change::PromptsListChanged,
        Change::ResourceUpdated("file:///a".into()),
        Change::ToolsListChanged,
    ] {
        two.announce(change).await.unwrap();
    }
    let told = next(&mut tools).await;
    assert_eq!(told["method"], "notifications/tools/list_changed");
    assert_eq!(subscription_of(&told), &json!(1));
    let told = next(&mut prompts).await;
    assert_eq!(told["method"], "notifications/prompts/list_changed");
    assert_eq!(subscription_of(&told), &json!(2));
    let told = next(&mut prompts).await;
    assert_eq!(told["method"], "notifications/resources/updated");
    assert_eq!(told["params"]["uri"], "file:///a");
    // Nothing else came: a change each admits still reaches it next.
    one.announce(Change::ToolsListChanged).await.unwrap();
    one.announce(Change::PromptsListChanged).await.unwrap();
    assert_eq!(
        next(&mut tools).await["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        next(&mut prompts).await["method"],
        "notifications/prompts/list_changed"
    );
}

#[tokio::test]
async fn l3_a_filter_that_names_no_type_is_refused_with_32602() {
    let node = node(&Subscriptions::new(InMemoryBus::default()));
    let cases = [
        ("no filter", json!({})),
        ("not an object", json!({"notifications": true})),
        (
            "unknown type",
            json!({"notifications": {"toolsListChanged": true, "everything": true}}),
        ),
        (
            "not a flag",
            json!({"notifications": {"toolsListChanged": "yes"}}),
        ),
        (
            "not URIs",
            json!({"notifications": {"resourceSubscriptions": [1]}}),
        ),
    ];
    for (i, (case, params)) in cases.into_iter().enumerate() {
        let id = 10 + i as i64;
        let request = request(
            modern("subscriptions/listen"),
            body(id, "subscriptions/listen", params),
        );
        let response = node.handle(request).await;
        let (code, got, message) = refusal(response, StatusCode::BAD_REQUEST).await;
        assert_eq!(
            (code, got),
            (mcp_jsonrpc::code::INVALID_PARAMS, Some(Id::from(id))),
            "{case}"
        );
        assert!(message.contains("notifications"), "{case}: {message}");
    }
}

#[tokio::test]
async fn l4_closing_ends_every_stream_with_its_result_and_refuses_new_ones() {
    let subscriptions = Subscriptions::new(InMemoryBus::default());
    let node = node(&subscriptions);
    let mut sse = listen(&node, 3, json!({"toolsListChanged": true})).await;
    next(&mut sse).await;
    subscriptions.close();
    let result = next(&mut sse).await;
    assert_eq!(result["id"], 3);
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        3
    );
    assert!(
        sse.next().await.is_none(),
        "the stream ends after its result"
    );
    until_listening(&subscriptions, 0).await;
    let request = request(
        modern("subscriptions/listen"),
        body(4, "subscriptions/listen", json!({"notifications": {}})),
    );
    let (code, _, message) = refusal(node.handle(request).await, StatusCode::OK).await;
    assert_eq!(code, mcp_jsonrpc::code::INTERNAL_ERROR);
    assert!(message.contains("shutting down"), "{message}");
}

#[tokio::test]
async fn l4_a_stream_the_client_closes_ends_and_holds_nothing() {
    let subscriptions = Subscriptions::new(InMemoryBus::default());
    let node = node(&subscriptions);
    let mut streams = Vec::new();
    for id in 0..3 {
        let mut sse = listen(&node, id, json!({"toolsListChanged": true})).await;
        next(&mut sse).await;
        streams.push(sse);
    }
    assert_eq!(subscriptions.listening(), 3);
    streams.truncate(1);
    until_listening(&subscriptions, 1).await;
    // The one left still hears.
    subscriptions
        .announce(Change::ToolsListChanged)
        .await
        .unwrap();
    assert_eq!(
        next(&mut streams[0]).await["method"],
        "notifications/tools/list_changed"
    );
}

/// A bus the test speaks for: what it sends is what every node hears.
struct ScriptedBus(std::sync::Mutex<Option<mpsc::Receiver<Heard>>>);

impl NotificationBus for ScriptedBus {
    fn publish(&self, _change: &Change) -> mcp_streamable_server::BusFuture<'_> {
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self) -> mpsc::Receiver<Heard> {
        self.0.lock().unwrap().take().expect("subscribed once")
    }
}

#[tokio::test]
async fn l4_after_a_gap_a_stream_is_told_of_everything_it_listens_to() {
    let (tx, rx) = mpsc::channel(8);
    tx.send(Heard::Gap).await.unwrap();
    let subscriptions = Subscriptions::new(ScriptedBus(std::sync::Mutex::new(Some(rx))));
    let scripted = node(&subscriptions);
    let filter = json!({"promptsListChanged": true, "resourceSubscriptions": ["file:///a"]});
    let mut sse = listen(&scripted, 5, filter).await;
    // The bus's first gap only says it is subscribed: nothing is told for it.
    assert_eq!(
        next(&mut sse).await["method"],
        "notifications/subscriptions/acknowledged"
    );
    tx.send(Heard::Gap).await.unwrap();
    let told = [next(&mut sse).await, next(&mut sse).await];
    assert_eq!(told[0]["method"], "notifications/prompts/list_changed");
    assert_eq!(told[1]["method"], "notifications/resources/updated");
    assert_eq!(told[1]["params"]["uri"], "file:///a");
    // A bus that never subscribes: listen requests are refused, in bounded time.
    let (_tx, rx) = mpsc::channel(8);
    let deaf = Subscriptions::new(ScriptedBus(std::sync::Mutex::new(Some(rx))));
    let deaf_node = node(&deaf);
    let request = request(
        modern("subscriptions/listen"),
        body(6, "subscriptions/listen", json!({"notifications": {}})),
    );
    let (code, _, message) = refusal(deaf_node.handle(request).await, StatusCode::OK).await;
    assert_eq!(code, mcp_jsonrpc::code::INTERNAL_ERROR);
    assert!(message.contains("bus"), "{message}");
}
