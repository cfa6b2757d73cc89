//! O4 (feature `otel`): the instruments of what is under the sessions: the stores' calls,
//! requests forwarded between nodes and sessions taken over, and `serve`'s timeouts and
//! `GOAWAY`s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_streamable_server::{
    Config, EventStore, InMemoryEventStore, InMemoryNetwork, ReplayError, StoreError, StoreFuture,
    StoredEvent, Write,
};
use serde_json::json;

use crate::harness::*;
use crate::otel::{recorded, recorded_node};

const STORE_DURATION: &str = "mcp.server.store.duration";

/// An event store in memory whose writes fail while `failing` is set.
#[derive(Clone, Default)]
struct Flaky {
    store: InMemoryEventStore,
    failing: Arc<AtomicBool>,
}

impl EventStore for Flaky {
    fn write<'a>(
        &'a self,
        session: &'a str,
        fence: Option<mcp_streamable_server::Fence>,
        writes: &'a [Write],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        if self.failing.load(Ordering::Relaxed) {
            let failed: StoreError = "the store is down".into();
            return Box::pin(std::future::ready(Err(failed)));
        }
        self.store.write(session, fence, writes)
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, ReplayError>> {
        self.store.replay_after(session, stream, after)
    }

    fn close<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.store.close(session)
    }
}

#[tokio::test]
async fn o4_store_calls_are_timed_by_operation_and_their_failures_counted() {
    let (recorded, telemetry) = recorded();
    let store = Flaky::default();
    let config = Config::default()
        .telemetry(telemetry)
        .event_store(store.clone());
    let service = service(config);
    let sid = initialize(&service, "2025-11-25").await;
    call_tool(&service, &sid, 1, "progress", json!({"steps": 1})).await;
    let write = Some(("mcp.store.operation", "event.write"));
    let writes = recorded.total(STORE_DURATION, write);
    assert!(writes >= 1, "{writes} writes timed");
    let failed = Some(("error.type", "store_error"));
    assert_eq!(recorded.total(STORE_DURATION, failed), 0);
    // The store goes down: what the session then writes fails, and is counted so.
    store.failing.store(true, Ordering::Relaxed);
    call_tool(&service, &sid, 2, "progress", json!({"steps": 1})).await;
    let failures = recorded.total("mcp.server.store.failed", write);
    assert!(failures >= 1, "{failures} failures counted");
    assert_eq!(recorded.total(STORE_DURATION, failed), failures);
    assert!(recorded.total(STORE_DURATION, write) > writes);
}

/// N2 and N4 on the in-memory network: a call through a node that does not hold the session
/// is one forward, answered; a call for a dead holder's session is one session taken over.
#[tokio::test]
async fn o4_forwards_and_takeovers_are_counted_by_the_node_that_made_them() {
    let network = InMemoryNetwork::default();
    let node = |name: &str| recorded_node(&network, name);
    let ((a, on_a), (b, on_b)) = (node("a"), node("b"));
    let sid = initialize(&a, "2025-11-25").await;
    call_tool(&b, &sid, 1, "progress", json!({"steps": 1})).await;
    let forwarded = "mcp.server.request.forwarded";
    let answered = Some(("mcp.forward.outcome", "answered"));
    assert_eq!(on_b.total(forwarded, answered), 1);
    assert_eq!(
        on_b.total(forwarded, Some(("http.request.method", "POST"))),
        1
    );
    network.kill("a");
    call_tool(&b, &sid, 2, "progress", json!({"steps": 1})).await;
    assert_eq!(network.holder(&sid).as_deref(), Some("b"));
    assert_eq!(on_b.total("mcp.server.session.taken_over", None), 1);
    assert_eq!(on_b.total(forwarded, answered), 1);
    // a served what came to it, and forwarded nothing.
    assert_eq!(on_a.total("mcp.server.session.active", None), 1);
}

/// The cluster's calls are timed as the stores' are: the session's start by the node that
/// started it, where it is and its takeover by the node that needed it.
#[tokio::test]
async fn o4_a_clusters_calls_are_timed_by_operation() {
    let network = InMemoryNetwork::default();
    let node = |name: &str| recorded_node(&network, name);
    let ((a, on_a), (b, on_b)) = (node("a"), node("b"));
    let operation = |name| Some(("mcp.store.operation", name));
    let sid = initialize(&a, "2025-11-25").await;
    assert_eq!(on_a.total(STORE_DURATION, operation("cluster.start")), 1);
    call_tool(&b, &sid, 1, "progress", json!({"steps": 1})).await;
    assert!(on_b.total(STORE_DURATION, operation("cluster.locate")) >= 1);
    assert_eq!(on_b.total(STORE_DURATION, operation("cluster.start")), 0);
    network.kill("a");
    call_tool(&b, &sid, 2, "progress", json!({"steps": 1})).await;
    assert_eq!(
        on_b.total(STORE_DURATION, operation("cluster.take_over")),
        1
    );
    assert_eq!(b.handle(delete(&sid)).await.status(), 204);
    assert_eq!(on_b.total(STORE_DURATION, operation("cluster.end")), 1);
}

#[cfg(feature = "serve")]
mod serve {
    use std::time::Duration;

    use mcp_streamable_server::serve::Options;
    use mcp_test_telemetry::Recorded;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpStream;
    use tokio::sync::oneshot;

    use crate::harness::*;
    use crate::otel::recorded;

    /// Reads `tcp` until the server closes it (bounded by `WAIT`).
    async fn closed_by_server(mut tcp: TcpStream) {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(WAIT, tcp.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "the server did not close the connection");
    }

    /// An HTTP/2 connection (h2's client) that made one request, and the task driving it.
    /// The client is kept: dropped, h2 would close the connection itself.
    type H2 = (
        h2::client::SendRequest<bytes::Bytes>,
        tokio::task::JoinHandle<Result<(), h2::Error>>,
    );

    async fn h2_connection(addr: std::net::SocketAddr) -> H2 {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (client, connection) = h2::client::handshake(tcp).await.unwrap();
        let connection = tokio::spawn(connection);
        let mut client = client.ready().await.unwrap();
        let uri = format!("http://{addr}/livez");
        let request = http::Request::get(uri).body(()).unwrap();
        let (response, _) = client.send_request(request, true).unwrap();
        assert_eq!(response.await.unwrap().status(), http::StatusCode::OK);
        (client, connection)
    }

    /// A service served with `options` on loopback: where, how to stop it, and its telemetry.
    struct Served {
        addr: std::net::SocketAddr,
        stop: oneshot::Sender<()>,
        task: tokio::task::JoinHandle<()>,
        recorded: Recorded,
    }

    async fn serve(options: Options) -> Served {
        let (recorded, telemetry) = recorded();
        let service = service(mcp_streamable_server::Config::default().telemetry(telemetry));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let options = options.health_paths("/livez", "/readyz");
        let task = tokio::spawn(options.serve(listener, service, stopped));
        Served {
            addr,
            stop,
            task,
            recorded,
        }
    }

    impl Served {
        async fn stop(self) -> Recorded {
            self.stop.send(()).unwrap();
            tokio::time::timeout(WAIT, self.task)
                .await
                .unwrap()
                .unwrap();
            self.recorded
        }
    }

    const TIMEOUT: &str = "mcp.server.connection.timeout";
    const GOAWAY: &str = "mcp.server.connection.goaway";

    #[tokio::test]
    async fn o4_serve_counts_its_timeouts_and_goaways_for_idleness() {
        let short = Duration::from_millis(100);
        let served = serve(
            Options::default()
                .header_read_timeout(short)
                .idle_timeout(short),
        )
        .await;
        // A connection that sends nothing.
        closed_by_server(TcpStream::connect(served.addr).await.unwrap()).await;
        let header_read = Some(("mcp.timeout.kind", "header_read"));
        assert_eq!(served.recorded.total(TIMEOUT, header_read), 1);
        // An HTTP/2 connection idle after its request: GOAWAY, for idleness.
        let (_client, idle) = h2_connection(served.addr).await;
        let ended = tokio::time::timeout(WAIT, idle).await;
        assert!(ended.is_ok(), "the idle connection is still open");
        let recorded = served.stop().await;
        let idle = Some(("mcp.goaway.reason", "idle"));
        assert_eq!(recorded.total(GOAWAY, idle), 1);
        assert_eq!(
            recorded.total(TIMEOUT, Some(("mcp.timeout.kind", "idle"))),
            1
        );
        assert_eq!(recorded.total(TIMEOUT, None), 2);
    }

    #[tokio::test]
    async fn o4_serve_counts_the_goaways_of_its_shutdown() {
        let served = serve(Options::default()).await;
        let (_client, open) = h2_connection(served.addr).await;
        let recorded = served.stop().await;
        tokio::time::timeout(WAIT, open)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let shutdown = Some(("mcp.goaway.reason", "shutdown"));
        assert_eq!(recorded.total(GOAWAY, shutdown), 1);
        assert_eq!(recorded.total(GOAWAY, None), 1);
    }
}
