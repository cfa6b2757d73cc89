//! Integration tests of `mcp-http-client`: the client and the connector against hyper servers on
//! loopback, plain and over TLS with the test authority's certificates, HTTP/1.1 and HTTP/2.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, Version};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use mcp_http_client::testing::Authority;
use mcp_http_client::{Client, Connector, Error, HttpClient};
use tokio::net::TcpListener;

/// What every test server answers: this body, and the HTTP version the request came in.
const BODY: &str = "0123456789";

/// Serves on loopback, over TLS with `tls` when given; answers [`BODY`] with the request's
/// version in `x-version`.
async fn serve(tls: Option<Arc<rustls::ServerConfig>>) -> SocketAddr {
    serve_counting(tls).await.0
}

/// [`serve`], with the count of connections accepted.
async fn serve_counting(tls: Option<Arc<rustls::ServerConfig>>) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let tls = tls.clone().map(tokio_rustls::TlsAcceptor::from);
            tokio::spawn(async move {
                let service = service_fn(|request: Request<hyper::body::Incoming>| async move {
                    let version = format!("{:?}", request.version());
                    let mut answer = Response::new(Full::new(Bytes::from_static(BODY.as_bytes())));
                    answer
                        .headers_mut()
                        .insert("x-version", version.parse().unwrap());
                    Ok::<_, Infallible>(answer)
                });
                let server = auto::Builder::new(TokioExecutor::new());
                let _ = match tls {
                    Some(tls) => match tls.accept(tcp).await {
                        Ok(tls) => server.serve_connection(TokioIo::new(tls), service).await,
                        Err(_) => return,
                    },
                    None => server.serve_connection(TokioIo::new(tcp), service).await,
                };
            });
        }
    });
    (addr, accepted)
}

fn get(url: &str) -> Request<Bytes> {
    Request::get(url).body(Bytes::new()).unwrap()
}

/// The version the server saw, from a client trusting `authority`.
async fn version_seen(client: &Client, url: &str) -> String {
    let answer = client.send(get(url)).await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.body(), BODY);
    answer.headers()["x-version"].to_str().unwrap().to_owned()
}

/// An error and its sources, as a log would show them.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn the_client_speaks_http1_plain_and_http2_or_http1_over_tls_as_alpn_chooses() {
    let authority = Authority::new("client tests");
    let leaf = authority.sign(&["localhost"], None);
    let client = Client::builder()
        .tls_config(authority.client_config())
        .build()
        .unwrap();
    let plain = serve(None).await;
    let both = serve(Some(leaf.server_config(&[b"h2", b"http/1.1"]))).await;
    let http1 = serve(Some(leaf.server_config(&[b"http/1.1"]))).await;
    let silent = serve(Some(leaf.server_config(&[]))).await;
    let url = |scheme: &str, addr: SocketAddr| format!("{scheme}://localhost:{}/", addr.port());
    assert_eq!(version_seen(&client, &url("http", plain)).await, "HTTP/1.1");
    assert_eq!(version_seen(&client, &url("https", both)).await, "HTTP/2.0");
    assert_eq!(
        version_seen(&client, &url("https", http1)).await,
        "HTTP/1.1"
    );
    assert_eq!(
        version_seen(&client, &url("https", silent)).await,
        "HTTP/1.1"
    );
}

#[tokio::test]
async fn the_connector_says_what_alpn_chose() {
    let authority = Authority::new("connector tests");
    let leaf = authority.sign(&["localhost", "127.0.0.1"], None);
    let connector = Connector::new(Duration::from_secs(5))
        .https(Some(authority.client_config()))
        .unwrap();
    let both = serve(Some(leaf.server_config(&[b"h2", b"http/1.1"]))).await;
    let http1 = serve(Some(leaf.server_config(&[b"http/1.1"]))).await;
    let connect = |url: String| connector.connect(&url.parse().unwrap());
    let h2 = connect(format!("https://127.0.0.1:{}/", both.port()))
        .await
        .unwrap();
    assert!(h2.is_tls() && h2.is_h2());
    let h1 = connect(format!("https://localhost:{}/", http1.port()))
        .await
        .unwrap();
    assert!(h1.is_tls() && !h1.is_h2());
    let plain = connect(format!("http://127.0.0.1:{}/", both.port()))
        .await
        .unwrap();
    assert!(!plain.is_tls() && !plain.is_h2());
    assert!(hyper_util::client::legacy::connect::Connection::connected(&h2).is_negotiated_h2());
}

#[tokio::test]
async fn an_untrusted_or_misnamed_certificate_is_refused_with_an_error_that_says_so() {
    let (trusted, stranger) = (Authority::new("trusted"), Authority::new("stranger"));
    let addr = serve(Some(
        trusted.sign(&["example.com"], None).server_config(&[b"h2"]),
    ))
    .await;
    let url = format!("https://localhost:{}/", addr.port());
    for (authority, expected) in [
        (&stranger, "invalid peer certificate: UnknownIssuer"),
        (&trusted, "certificate not valid for name \"localhost\""),
    ] {
        let client = Client::builder()
            .tls_config(authority.client_config())
            .build()
            .unwrap();
        let error = client.send(get(&url)).await.unwrap_err();
        let text = chain(&error);
        assert!(text.starts_with("http request failed"), "{text}");
        assert!(text.contains(expected), "{text}");
    }
}

/// The error a plain-`http` client built from `builder` meets when it GETs `addr`.
async fn failure(builder: mcp_http_client::ClientBuilder, addr: SocketAddr) -> Error {
    let client = builder.https(false).build().unwrap();
    let url = format!("http://{addr}/");
    client.send(get(&url)).await.unwrap_err()
}

#[tokio::test]
async fn a_body_over_the_bound_and_a_silent_server_are_errors_of_their_own() {
    let small = Client::builder().max_body_bytes(BODY.len() - 1);
    let error = failure(small, serve(None).await).await;
    assert!(error.is_body_too_large(), "{error:?}");
    assert_eq!(error.to_string(), "http body larger than 9 bytes");

    // Accepts, and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent = listener.local_addr().unwrap();
    let _held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            open.push(tcp);
        }
    });
    let quick = Client::builder().timeout(Duration::from_millis(100));
    let error = failure(quick, silent).await;
    assert!(error.is_timeout(), "{error:?}");
}

#[tokio::test]
async fn without_https_an_https_url_fails_and_a_relative_one_is_refused() {
    let client = Client::builder().https(false).build().unwrap();
    let error = client.send(get("https://localhost:1/")).await.unwrap_err();
    assert!(chain(&error).contains("https is not enabled"), "{error:?}");
    let error = client.send(get("/relative")).await.unwrap_err();
    assert_eq!(error.to_string(), "not an absolute http or https url");
}

#[tokio::test]
async fn keep_alive_reuses_a_connection_and_its_absence_does_not() {
    for (keep_alive, connections) in [(true, 1), (false, 3)] {
        let (addr, accepted) = serve_counting(None).await;
        let client = Client::builder().https(false).keep_alive(keep_alive);
        let client = client.build().unwrap();
        for _ in 0..3 {
            let answer = client.send(get(&format!("http://{addr}/"))).await.unwrap();
            assert_eq!(answer.version(), Version::HTTP_11);
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            connections,
            "keep-alive {keep_alive}"
        );
    }
}
