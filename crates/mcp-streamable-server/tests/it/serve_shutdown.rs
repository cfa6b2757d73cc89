//! S24: graceful shutdown ends an open GET stream and returns, with `serve` and with axum
//! given `shutdown_signal`.

use std::time::Duration;

use http::StatusCode;
use mcp_streamable_server::Config;
use mcp_streamable_server::serve::{Options, shutdown_signal};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::harness::{self, WAIT, initialize_body};
use crate::serve::start;
use crate::tcp::{self, Sse};

/// Initializes a session at `uri` and opens its standalone GET stream.
async fn open_stream(client: &tcp::HttpClient, uri: &str) -> Sse {
    let response = client
        .request(tcp::post(uri, None, initialize_body(0, "2025-06-18")))
        .await
        .unwrap();
    let sid = harness::session_id(response.headers()).unwrap();
    assert!(Sse::new(response).next().await.is_some());
    let response = client.request(tcp::get(uri, &sid, None)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    Sse::new(response)
}

#[tokio::test(start_paused = true)]
async fn s24_serve_shutdown_ends_an_open_get_stream_and_returns() {
    let server = start(Options::default()).await;
    let client = tcp::client();
    let mut stream = open_stream(&client, &server.uri()).await;
    assert_eq!(server.service.session_count(), 1);
    let service = server.service.clone();
    server.stop().await;
    assert!(stream.next().await.is_none(), "the stream ended");
    assert_eq!(service.session_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn s24_axum_with_shutdown_signal_returns_with_a_get_stream_open() {
    let service = harness::service(Config::default());
    let app = axum::Router::new().route_service("/mcp", service.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (signal, signalled) = oneshot::channel::<()>();
    let grace = Duration::from_secs(5);
    let server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown_signal(service.clone(), grace, signalled))
            .into_future(),
    );
    let client = tcp::client();
    let mut stream = open_stream(&client, &uri).await;
    signal.send(()).unwrap();
    assert!(stream.next().await.is_none(), "the stream ended");
    let returned = tokio::time::timeout(WAIT, server).await;
    assert!(returned.is_ok(), "axum's serve still waits");
    returned.unwrap().unwrap().unwrap();
    assert_eq!(service.session_count(), 0);
}
