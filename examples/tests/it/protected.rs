//! The echo application protected with the JWT verifier, over loopback: the key set served by
//! the test, tokens signed by the test with the auth crate's fixture keys, the example's own
//! serving code (`support/serve.rs`), and our client with an authorization provider.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_streamable_http::auth::{Guard, jwt::JwtVerifier};
use mcp_streamable_http::client::{AuthContext, BoxError, Client, Error as ClientError};
use mcp_streamable_http::http::{self, HeaderValue, StatusCode};
use mcp_streamable_http::jsonrpc::{Id, Message, Notification, Request, to_raw_value};
use mcp_streamable_http::server::{Config, StreamableHttpService};
use mcp_streamable_http::transport::{Connection, Sender, Transport};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use support::echo_app;
use support::serve;

const ISSUER: &str = "https://auth.example.test";
const SCOPE: &str = "mcp";
pub(crate) const RSA1: &[u8] =
    include_bytes!("../../../crates/mcp-streamable-auth/tests/fixtures/rsa1.pem");
pub(crate) const PUBLIC: &str =
    include_str!("../../../crates/mcp-streamable-auth/tests/fixtures/public.json");
/// Bounds every wait of the test: nothing here should take more than a moment.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// A task the test started, stopped when the test ends, passed or not.
pub(crate) struct Task(pub(crate) JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves the key set of fixture key `rsa1` (as `kid` "rsa1") to every request.
async fn serve_jwks() -> (String, Task) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let public: Value = serde_json::from_str(PUBLIC).unwrap();
    let mut key = public["rsa1"].clone();
    key["kid"] = "rsa1".into();
    key["use"] = "sig".into();
    let document = Bytes::from(json!({"keys": [key]}).to_string());
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let document = document.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_: http::Request<Incoming>| {
                    let body = Full::new(document.clone());
                    async move { Ok::<_, Infallible>(http::Response::new(body)) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    (url, Task(task))
}

/// The echo server as `echo_server --auth-issuer ISSUER --auth-jwks-url JWKS --auth-audience
/// http://ADDR/mcp --auth-scope mcp` builds it, served by the example's serving code until the
/// returned sender is dropped. Returns the endpoint's URL (the resource).
pub(crate) async fn serve_protected(
    issuer: &str,
    jwks_url: &str,
) -> (SocketAddr, String, oneshot::Sender<()>, Task) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let verifier = JwtVerifier::builder(issuer, jwks_url, &resource)
        .build()
        .unwrap();
    let guard = Guard::builder(&resource)
        .authorization_server(issuer)
        .required_scopes([SCOPE])
        .build(verifier)
        .unwrap();
    let service =
        StreamableHttpService::new(Config::default().authorization(guard), echo_app::session);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        serve::run(listener, service, shutdown).await.unwrap();
    });
    (addr, resource, stop, Task(task))
}

fn sign(resource: &str, subject: &str, scope: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({
        "iss": ISSUER, "sub": subject, "aud": resource, "scope": scope,
        "client_id": "test-client", "iat": now, "exp": now + 300,
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa1".into());
    let key = EncodingKey::from_rsa_pem(RSA1).unwrap();
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

/// A client whose provider returns `Bearer token`, or no header at all.
fn client(url: &str, token: Option<String>) -> Client {
    let value = token.map(|t| HeaderValue::from_str(&format!("Bearer {t}")).unwrap());
    Client::builder(url)
        .auth(move |_: AuthContext| {
            let value = value.clone();
            async move { Ok::<_, BoxError>(value) }
        })
        .build()
        .unwrap()
}

pub(crate) fn request(id: i64, method: &str, params: Value) -> Message {
    Request::new(Id::Number(id), method, Some(to_raw_value(&params).unwrap())).into()
}

pub(crate) fn initialize() -> Message {
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    request(0, "initialize", params)
}

/// The result of the response to request `id`, reading past anything else.
pub(crate) async fn result_of<C: Connection>(conn: &mut C, id: i64) -> Value {
    loop {
        let message = tokio::time::timeout(WAIT, conn.recv())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("the connection still open");
        if let Message::Response(response) = message
            && response.id() == Some(&Id::Number(id))
        {
            let (_, result) = response.into_parts();
            return serde_json::from_str(result.expect("a result").get()).unwrap();
        }
    }
}

/// One raw HTTP/1.1 exchange: the status, the headers as text, and the body.
async fn raw(addr: SocketAddr, head: &str, body: &str) -> (u16, String, String) {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(WAIT, tcp.read_to_string(&mut answer))
        .await
        .expect("the whole answer in time")
        .unwrap();
    let (headers, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = headers[9..12].parse().unwrap();
    (status, headers.to_ascii_lowercase(), body.to_owned())
}

/// A4, A5 end to end: a tool call with a good token; 401 without one, with the challenge and
/// the metadata naming the issuer over the wire; 403 with a token lacking the scope.
#[tokio::test]
async fn a_protected_echo_server_serves_good_tokens_and_refuses_the_rest() {
    let (jwks_url, _jwks) = serve_jwks().await;
    let (addr, resource, stop, server) = serve_protected(ISSUER, &jwks_url).await;

    // A good token: a session, and a tool call in it.
    let good = sign(&resource, "alice", "mcp other");
    let mut conn = client(&resource, Some(good)).connect().await.unwrap();
    let sender = conn.sender();
    sender.send(initialize().into()).await.unwrap();
    let init = result_of(&mut conn, 0).await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    let initialized = Notification::new("notifications/initialized", None);
    sender.send(initialized.into()).await.unwrap();
    let call = json!({"name": "echo", "arguments": {"text": "hello, protected"}});
    sender
        .send(request(1, "tools/call", call).into())
        .await
        .unwrap();
    let echoed = result_of(&mut conn, 1).await;
    assert_eq!(echoed["content"][0]["text"], "hello, protected");
    conn.close().await.unwrap();

    // No token, and a token without the scope.
    let scopeless = sign(&resource, "alice", "other");
    for (token, status) in [
        (None, StatusCode::UNAUTHORIZED),
        (Some(scopeless), StatusCode::FORBIDDEN),
    ] {
        let conn = client(&resource, token).connect().await.unwrap();
        let refused = conn.sender().send(initialize().into()).await.unwrap_err();
        let refused = refused
            .into_source()
            .and_then(|source| source.downcast::<ClientError>().ok())
            .expect("the client's error");
        assert_eq!(refused.status(), Some(status), "{refused}");
    }

    // The challenge and the metadata, as a client discovers them.
    let post = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream";
    let (status, headers, _) = raw(addr, post, "{}").await;
    assert_eq!(status, 401);
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    let challenge =
        format!(r#"www-authenticate: bearer resource_metadata="{metadata_url}", scope="mcp""#);
    assert!(headers.contains(&challenge), "{headers}");
    let (status, _, body) = raw(
        addr,
        "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1",
        "",
    )
    .await;
    assert_eq!(status, 200);
    let document: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(document["resource"], resource.as_str());
    assert_eq!(document["authorization_servers"], json!([ISSUER]));
    assert_eq!(document["scopes_supported"], json!([SCOPE]));

    // The server shuts down when told, and the test waits until it has.
    drop(stop);
    let mut server = server;
    tokio::time::timeout(WAIT, &mut server.0)
        .await
        .expect("the server stopped in time")
        .unwrap();
}
