//! Over TLS: this client against this project's server terminating TLS itself (`serve` with
//! `Options::tls`), on HTTP/2 and HTTP/1.1 as ALPN chooses, with certificates the tests make;
//! a certificate the client must not trust refused with an error that says why; a certificate
//! reloaded while the server runs.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use http::Version;
use mcp_http_client::testing::{Authority, Leaf};
use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_client::Client;
use mcp_streamable_server::serve::{Options, Tls};
use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService};
use mcp_transport::{Connection, Sender, Transport};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::{builder, handshake, initialize, recv_response, send, within};

/// Writes `leaf`'s certificate and key into `dir`, as `cert.pem` and `key.pem`.
fn write(leaf: &Leaf, dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, &leaf.cert).unwrap();
    std::fs::write(&key, &leaf.key).unwrap();
    (cert, key)
}

/// A temporary directory, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("mcp-tls-{name}-{}-{}", std::process::id(), nanos()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn nanos() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The HTTP versions the server's sessions were started over.
type Versions = Arc<Mutex<Vec<Version>>>;

/// A server on a loopback port with `tls`; its address, the versions its sessions began over,
/// and the sender that shuts it down.
async fn serve(tls: Tls) -> (SocketAddr, Versions, oneshot::Sender<()>) {
    let versions: Versions = Arc::default();
    let seen = Arc::clone(&versions);
    let service = StreamableHttpService::new(
        Config::default(),
        move |conn: ServerConnection, parts: http::request::Parts| {
            seen.lock().unwrap().push(parts.version);
            answer(conn)
        },
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let options = Options::default().path("/mcp").tls(tls);
    tokio::spawn(options.serve(listener, service, stopped));
    (addr, versions, stop)
}

/// A session answering every request with its method.
async fn answer(mut conn: ServerConnection) {
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        if let Message::Request(request) = message {
            let result = match request.method.as_str() {
                "initialize" => serde_json::json!({
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "serverInfo": {"name": "tls", "version": "0"}
                }),
                method => serde_json::json!({ "method": method }),
            };
            let answer = Response::success(request.id, to_raw_value(&result).unwrap());
            let _ = sender.send(answer.into()).await;
        }
    }
}

/// Runs a session over `https://localhost:PORT/mcp` trusting `authority`: the handshake, then
/// one request answered.
async fn session(addr: SocketAddr, authority: &Authority) {
    let url = format!("https://localhost:{}/mcp", addr.port());
    let client = builder(&url).tls_config(authority.client_config());
    let mut conn = within(client.build().unwrap().connect()).await.unwrap();
    handshake(&mut conn).await;
    send(&conn, crate::request(2, "tools/list")).await.unwrap();
    let answer = recv_response(&mut conn).await;
    let result: serde_json::Value = serde_json::from_str(answer.result().unwrap().get()).unwrap();
    assert_eq!(result["method"], "tools/list");
    conn.close().await.unwrap();
}

/// What a client trusting `authority` gets when it connects and sends `initialize`.
async fn refusal(addr: SocketAddr, authority: &Authority) -> String {
    let url = format!("https://localhost:{}/mcp", addr.port());
    let client: Client = builder(&url)
        .tls_config(authority.client_config())
        .build()
        .unwrap();
    let conn = match within(client.connect()).await {
        Ok(conn) => conn,
        Err(error) => return error_chain(&error),
    };
    let sent = within(conn.sender().send(initialize(1).into())).await;
    error_chain(&sent.expect_err("the server was trusted"))
}

/// An error and its sources, as a user would read them in a log.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn our_client_and_server_speak_http2_over_tls_when_alpn_offers_it() {
    let authority = Authority::new("test authority");
    let dir = TempDir::new("h2");
    let (cert, key) = write(&authority.sign(&["localhost"], None), &dir.0);
    let (addr, versions, _stop) = serve(Tls::from_pem_files(cert, key).unwrap()).await;
    session(addr, &authority).await;
    assert_eq!(*versions.lock().unwrap(), [Version::HTTP_2]);
}

#[tokio::test]
async fn our_client_and_server_speak_http1_over_tls_when_alpn_offers_only_it() {
    let authority = Authority::new("test authority");
    let leaf = authority.sign(&["localhost"], None);
    let tls = Tls::from_config(leaf.server_config(&[b"http/1.1"]));
    let (addr, versions, _stop) = serve(tls).await;
    session(addr, &authority).await;
    assert_eq!(*versions.lock().unwrap(), [Version::HTTP_11]);
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused_with_an_error_that_says_so() {
    let authority = Authority::new("test authority");
    let dir = TempDir::new("name");
    let (cert, key) = write(&authority.sign(&["example.com"], None), &dir.0);
    let (addr, versions, _stop) = serve(Tls::from_pem_files(cert, key).unwrap()).await;
    let error = refusal(addr, &authority).await;
    assert!(error.contains("certificate"), "{error}");
    assert!(
        error.contains("not valid for name \"localhost\""),
        "{error}"
    );
    assert!(versions.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_expired_certificate_is_refused_with_an_error_that_says_so() {
    let authority = Authority::new("test authority");
    let dir = TempDir::new("expired");
    let (cert, key) = write(&authority.sign(&["localhost"], Some((2020, 2021))), &dir.0);
    let (addr, versions, _stop) = serve(Tls::from_pem_files(cert, key).unwrap()).await;
    let error = refusal(addr, &authority).await;
    assert!(error.contains("certificate"), "{error}");
    assert!(error.contains("certificate expired"), "{error}");
    assert!(versions.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_certificate_from_an_authority_not_trusted_is_refused_with_an_error_that_says_so() {
    let (authority, stranger) = (Authority::new("trusted"), Authority::new("stranger"));
    let dir = TempDir::new("unknown");
    let (cert, key) = write(&authority.sign(&["localhost"], None), &dir.0);
    let (addr, _versions, _stop) = serve(Tls::from_pem_files(cert, key).unwrap()).await;
    let error = refusal(addr, &stranger).await;
    assert!(error.contains("UnknownIssuer"), "{error}");
}

#[tokio::test]
async fn a_reloaded_certificate_is_served_to_the_connections_that_follow() {
    let (old, new) = (Authority::new("old"), Authority::new("new"));
    let dir = TempDir::new("reload");
    let (cert, key) = write(&old.sign(&["localhost"], None), &dir.0);
    let tls = Tls::from_pem_files(&cert, &key).unwrap();
    let (addr, _versions, _stop) = serve(tls.clone()).await;
    session(addr, &old).await;

    // A renewal half written is refused, and the certificate served so far stays.
    std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\n").unwrap();
    let error = tls.reload().unwrap_err().to_string();
    assert!(error.contains("key.pem"), "{error}");
    session(addr, &old).await;

    // A key that is not the certificate's is refused too.
    let other = new.sign(&["localhost"], None);
    std::fs::write(&key, &other.key).unwrap();
    let error = tls.reload().unwrap_err().to_string();
    assert!(error.contains("cert.pem and"), "{error}");
    session(addr, &old).await;

    write(&new.sign(&["localhost"], None), &dir.0);
    tls.reload().unwrap();
    session(addr, &new).await;
    let error = refusal(addr, &old).await;
    assert!(error.contains("UnknownIssuer"), "{error}");
}
