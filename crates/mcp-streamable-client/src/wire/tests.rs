//! Which connections carry an `https` endpoint's requests: the pool's own over TLS when the
//! server chose HTTP/1.1 by ALPN, hyper-util's, on the very connection that found out, when it
//! chose HTTP/2.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use mcp_http_client::testing::Authority;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::{Call, Http, NO_SESSION};

/// A TLS server for `localhost` offering `alpn`, answering every request with `{}`; its
/// address and the count of connections it accepted.
async fn serve(authority: &Authority, alpn: &[&[u8]]) -> (SocketAddr, Arc<AtomicUsize>) {
    let config = authority.sign(&["localhost"], None).server_config(alpn);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::<AtomicUsize>::default();
    tokio::spawn(accept_all(
        listener,
        TlsAcceptor::from(config),
        accepted.clone(),
    ));
    (addr, accepted)
}

/// Answers on every connection `listener` accepts, counting them in `accepted`.
async fn accept_all(listener: TcpListener, tls: TlsAcceptor, accepted: Arc<AtomicUsize>) {
    while let Ok((tcp, _)) = listener.accept().await {
        accepted.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(answer(tls.accept(tcp)));
    }
}

/// Answers `{}` to every request on the connection, once its handshake is done.
async fn answer(handshake: tokio_rustls::Accept<tokio::net::TcpStream>) {
    let Ok(tls) = handshake.await else {
        return;
    };
    let service = service_fn(|_| async {
        let mut answer = http::Response::new(Full::new(Bytes::from_static(b"{}")));
        let json = http::HeaderValue::from_static("application/json");
        answer
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, json);
        Ok::<_, Infallible>(answer)
    });
    let server = auto::Builder::new(TokioExecutor::new());
    let _ = server.serve_connection(TokioIo::new(tls), service).await;
}

/// The HTTP layer of a client of `https://localhost:PORT/mcp` trusting `authority`.
fn http(authority: &Authority, addr: SocketAddr) -> Arc<Http> {
    let url = format!("https://localhost:{}/mcp", addr.port());
    let client = crate::Client::builder(url).tls_config(authority.client_config());
    client.build().unwrap().http
}

/// Posts `{}` three times, one after the other, reading each answer to its end; whether each
/// answer's body was read off a pooled connection of the client's own.
async fn three_posts(http: &Http) -> Vec<bool> {
    let mut pooled = Vec::new();
    for _ in 0..3 {
        let call = Call::post(
            &http.config,
            &http.config.url,
            &NO_SESSION,
            Bytes::from("{}"),
        );
        let response = http.execute(&call).await.unwrap();
        let body = response.into_body();
        pooled.push(body.drives_connection());
        assert_eq!(body.collect().await.unwrap().to_bytes(), "{}");
    }
    pooled
}

#[tokio::test]
async fn an_https_endpoint_that_chose_http1_is_spoken_to_on_the_pools_connections() {
    let authority = Authority::new("pool tests");
    let (addr, accepted) = serve(&authority, &[b"http/1.1"]).await;
    let http = http(&authority, addr);
    assert_eq!(three_posts(&http).await, [true; 3]);
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one kept-alive connection"
    );
    assert!(http.pool.as_ref().unwrap().speaks_http1());
}

#[tokio::test]
async fn an_https_endpoint_that_chose_http2_is_hyper_utils_on_the_connection_that_found_out() {
    let authority = Authority::new("pool tests");
    let (addr, accepted) = serve(&authority, &[b"h2", b"http/1.1"]).await;
    let http = http(&authority, addr);
    assert_eq!(three_posts(&http).await, [false; 3]);
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "the parked connection, multiplexed"
    );
    assert!(!http.pool.as_ref().unwrap().speaks_http1());
}
