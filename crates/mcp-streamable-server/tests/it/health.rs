//! H1-H3: `serve`'s liveness and readiness probes, the readiness of a service shutting down or
//! of a node without its lease, and `serve::terminated` on SIGTERM. Over loopback TCP, on an
//! OS-picked port.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_streamable_server::serve::Options;
use mcp_streamable_server::{AllowList, Config, InMemoryNetwork, Readiness, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::harness::{self, WAIT, initialize_body};
use crate::tcp;

/// `serve` with probes at `/livez` and `/readyz`, MCP at `/mcp`; it stops when dropped.
struct Probed {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn serve_probed(service: StreamableHttpService) -> Probed {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let options = Options::default()
        .path("/mcp")
        .health_paths("/livez", "/readyz");
    tokio::spawn(options.serve(listener, service, stopped));
    Probed { addr, _stop: stop }
}

impl Probed {
    /// A probe's status and body, on a connection of its own.
    async fn probe(&self, method: http::Method, path: &str) -> (StatusCode, String) {
        let request = Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr))
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = tokio::time::timeout(WAIT, tcp::client().request(request))
            .await
            .expect("a probe is answered")
            .unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    async fn get(&self, path: &str) -> (StatusCode, String) {
        self.probe(http::Method::GET, path).await
    }
}

fn answer(status: StatusCode, body: &str) -> (StatusCode, String) {
    (status, format!("{body}\n"))
}

#[tokio::test]
async fn h1_probes_are_answered_before_the_service_and_start_nothing() {
    // Hosts checked: a probe's `Host` is the pod's address, which the service would refuse.
    let config = Config::default().allowed_hosts(AllowList::List(vec!["mcp.example.com".into()]));
    let service = harness::service(config);
    let server = serve_probed(service.clone()).await;
    assert_eq!(server.get("/livez").await, answer(StatusCode::OK, "ok"));
    assert_eq!(server.get("/readyz").await, answer(StatusCode::OK, "ready"));
    let (status, _) = server.probe(http::Method::HEAD, "/readyz").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = server.probe(http::Method::POST, "/readyz").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    // Other paths are still the path check's, and the MCP path the service's.
    assert_eq!(server.get("/healthz").await.0, StatusCode::NOT_FOUND);
    let mcp = format!("http://{}/mcp", server.addr);
    let response = tcp::client()
        .request(tcp::post(&mcp, None, initialize_body(0, "2025-06-18")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN, "the host check");
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn h2_readiness_is_503_once_shutdown_begins_and_liveness_stays() {
    let service = harness::service(Config::default());
    let server = serve_probed(service.clone()).await;
    assert_eq!(service.readiness(), Readiness::Ready);
    assert_eq!(server.get("/readyz").await, answer(StatusCode::OK, "ready"));
    // What `shutdown_signal` does first; the listener is still open, as under axum's drain.
    tokio::time::timeout(WAIT, service.shutdown(Duration::from_secs(1)))
        .await
        .unwrap();
    assert_eq!(service.readiness(), Readiness::ShuttingDown);
    let unready = answer(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
    assert_eq!(server.get("/readyz").await, unready);
    assert_eq!(server.get("/livez").await, answer(StatusCode::OK, "ok"));
}

#[tokio::test]
async fn h2_readiness_is_503_while_the_nodes_lease_is_not_held() {
    let network = InMemoryNetwork::default();
    let node = harness::service(Config::default().cluster(network.node("a")));
    let server = serve_probed(node.clone()).await;
    assert_eq!(server.get("/readyz").await, answer(StatusCode::OK, "ready"));
    network.lapse("a");
    assert_eq!(node.readiness(), Readiness::LeaseNotHeld);
    let unready = answer(StatusCode::SERVICE_UNAVAILABLE, "lease not held");
    assert_eq!(server.get("/readyz").await, unready);
    assert_eq!(server.get("/livez").await, answer(StatusCode::OK, "ok"));
    // Back as a new incarnation: ready again.
    network.renew("a");
    assert_eq!(server.get("/readyz").await, answer(StatusCode::OK, "ready"));
}

/// SIGTERM sent to this process (by `kill`, as a service manager sends it) completes the
/// future, and the process, whose handler tokio now runs, goes on.
#[cfg(unix)]
#[tokio::test]
async fn h3_terminated_completes_on_sigterm() {
    let terminated = mcp_streamable_server::serve::terminated();
    let pid = std::process::id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(status.success());
    tokio::time::timeout(WAIT, terminated)
        .await
        .expect("SIGTERM completes terminated()");
}
