//! The notification bus (SPEC L5): a change announced on one node reaches the listen streams of
//! every node, on one Redis and on a Redis Cluster (sharded pub/sub); after Redis restarts, a
//! node subscribes again by itself and its streams are told to look again.

use mcp_jsonrpc::{Id, Message, Request};
use mcp_streamable_server::{Change, Subscriptions};
use mcp_transport::Connection;
use mcp_transport::memory::{MemoryConnection, pair};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::support::{PATIENCE, Redis, eventually, on_both, options};

/// A listen stream with `filter` served by `subscriptions`: the client's end, and the task
/// serving it.
fn listen(
    subscriptions: &Subscriptions,
    id: i64,
    filter: Value,
) -> (MemoryConnection, JoinHandle<()>) {
    let (mut server, client) = pair();
    let params = mcp_jsonrpc::to_raw_value(&json!({"notifications": filter})).unwrap();
    let request = Request::new(Id::from(id), "subscriptions/listen", Some(params));
    let subscriptions = subscriptions.clone();
    let task = tokio::spawn(async move { subscriptions.serve(&mut server, &request).await });
    (client, task)
}

/// The next message the client gets, as JSON: its method (or `result`), bounded in time.
async fn next(client: &mut MemoryConnection) -> Value {
    let message = tokio::time::timeout(PATIENCE, client.recv())
        .await
        .expect("a message in time")
        .unwrap()
        .expect("the stream is open");
    match message {
        Message::Notification(n) => {
            let params: Value = serde_json::from_str(n.params.as_deref().unwrap().get()).unwrap();
            json!({"method": n.method, "params": params})
        }
        other => json!({"other": format!("{other:?}")}),
    }
}

async fn acknowledged(client: &mut MemoryConnection) {
    let ack = next(client).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
}

async fn a_change_on_one_node_reaches_the_streams_of_every_node(redis: Redis) {
    let mut nodes = Vec::new();
    for name in ["a", "b", "c"] {
        let backend = redis.node(name, options()).await;
        nodes.push(Subscriptions::new(backend.notification_bus()));
    }
    let (mut on_a, _a) = listen(&nodes[0], 1, json!({"toolsListChanged": true}));
    let (mut on_b, _b) = listen(&nodes[1], 2, json!({"toolsListChanged": true}));
    let filter = json!({"resourceSubscriptions": ["file:///x"]});
    let (mut on_c, _c) = listen(&nodes[2], 3, filter);
    for client in [&mut on_a, &mut on_b, &mut on_c] {
        acknowledged(client).await;
    }
    nodes[0].announce(Change::ToolsListChanged).await.unwrap();
    nodes[1]
        .announce(Change::ResourceUpdated("file:///x".into()))
        .await
        .unwrap();
    for (client, id) in [(&mut on_a, 1), (&mut on_b, 2)] {
        let told = next(client).await;
        assert_eq!(told["method"], "notifications/tools/list_changed");
        assert_eq!(
            told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            id
        );
    }
    let told = next(&mut on_c).await;
    assert_eq!(told["method"], "notifications/resources/updated");
    assert_eq!(told["params"]["uri"], "file:///x");
    // Each node heard each change once: the streams got nothing more.
    nodes[2].announce(Change::PromptsListChanged).await.unwrap();
    nodes[2].announce(Change::ToolsListChanged).await.unwrap();
    assert_eq!(
        next(&mut on_a).await["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        next(&mut on_b).await["method"],
        "notifications/tools/list_changed"
    );
}
on_both!(a_change_on_one_node_reaches_the_streams_of_every_node);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_restarts_a_node_subscribes_again_and_its_streams_look_again() {
    let mut redis = Redis::single();
    let a = Subscriptions::new(redis.node("a", options()).await.notification_bus());
    let b = Subscriptions::new(redis.node("b", options()).await.notification_bus());
    let (mut on_b, _b) = listen(&b, 1, json!({"toolsListChanged": true}));
    acknowledged(&mut on_b).await;
    redis.server().restart().expect("redis restarts");
    // Whatever was published while b was away is lost: b's stream is told to look again.
    let told = next(&mut on_b).await;
    assert_eq!(told["method"], "notifications/tools/list_changed");
    // Then it hears new changes again, once a can publish them.
    eventually("a change is published after the restart", || async {
        a.announce(Change::ToolsListChanged).await.is_ok()
    })
    .await;
    let told = next(&mut on_b).await;
    assert_eq!(told["method"], "notifications/tools/list_changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_closed_on_one_node_ends_there_and_the_others_go_on() {
    let redis = Redis::single();
    let a = Subscriptions::new(redis.node("a", options()).await.notification_bus());
    let (mut first, first_task) = listen(&a, 1, json!({"toolsListChanged": true}));
    let (mut second, _second) = listen(&a, 2, json!({"toolsListChanged": true}));
    acknowledged(&mut first).await;
    acknowledged(&mut second).await;
    assert_eq!(a.listening(), 2);
    drop(first);
    first_task.await.unwrap();
    assert_eq!(a.listening(), 1);
    a.announce(Change::ToolsListChanged).await.unwrap();
    assert_eq!(
        next(&mut second).await["method"],
        "notifications/tools/list_changed"
    );
}
