//! The binary's flags that configure the server rather than the children: `--metrics`
//! (Prometheus's text format), `--auth-*` (MCP authorization in front of every child) and
//! `--allowed-host` (the public name answered), each through a real `mcp-gateway serve`.

use std::ffi::OsStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_streamable_client::{Client, Family};
use mcp_transport::Transport as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::binary::Binary;
use crate::harness::*;

const RSA1: &[u8] = include_bytes!("../../../mcp-streamable-auth/tests/fixtures/rsa1.pem");
const PUBLIC: &str = include_str!("../../../mcp-streamable-auth/tests/fixtures/public.json");
const ISSUER: &str = "https://auth.gateway.test";
const AUDIENCE: &str = "https://gateway.test/mcp";
const SCOPE: &str = "mcp";

/// One HTTP/1.1 exchange on a new connection to the `host:port` of `url`: the status and
/// everything after the status line.
async fn exchange(url: &str, request: &str) -> (u16, String) {
    let authority = url.split('/').nth(2).unwrap();
    let mut tcp = within(TcpStream::connect(authority)).await.unwrap();
    within(tcp.write_all(request.as_bytes())).await.unwrap();
    let mut answer = String::new();
    within(tcp.read_to_string(&mut answer)).await.unwrap();
    let (status_line, rest) = answer.split_once("\r\n").unwrap_or((&answer, ""));
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok());
    (status.unwrap_or(0), rest.to_owned())
}

/// A POST of `initialize` to `url` with `Host: host` and extra header lines.
async fn post_initialize(url: &str, host: &str, extra: &str) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "gateway-it", "version": "0"}}})
    .to_string();
    let path = url.splitn(4, '/').nth(3).unwrap();
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    exchange(url, &request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_in_prometheus_format_and_count_the_calls() {
    let args = ["--addr", "127.0.0.1:0", "--metrics", "127.0.0.1:0"];
    let mut gateway = Binary::serve(args).await;
    let line = gateway.line().await;
    let metrics = line
        .strip_prefix("metrics on ")
        .unwrap_or_else(|| panic!("no metrics line: {line:?}"))
        .to_owned();
    assert!(metrics.ends_with("/metrics"), "{metrics}");

    let (mut conn, init) = session(&gateway.url).await;
    assert!(!init.is_error(), "{init:?}");
    gateway.children.push(child_pid(&mut conn, 1).await);

    // The operation is recorded as its answer goes out: scrape until it shows, boundedly.
    let scrape = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let mut text = String::new();
    for _ in 0..100 {
        let (status, body) = exchange(&metrics, scrape).await;
        assert_eq!(status, 200, "{body}");
        text = body;
        if calls(&text) == Some(1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(calls(&text), Some(1), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("target_info{") && l.contains(r#"service_name="mcp-gateway""#)),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("mcp_server_session_active") && l.ends_with(" 1")),
        "{text}"
    );
}

/// The count of `tools/call` operations the scrape says, if it has the series.
fn calls(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| {
            l.starts_with("mcp_server_operation_duration_seconds_count{")
                && l.contains(r#"mcp_method_name="tools/call""#)
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Serves the key set of fixture key `rsa1` (as `kid` "rsa1") over plain HTTP/1.1, one
/// request a connection, until the test ends.
async fn serve_jwks() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let public: Value = serde_json::from_str(PUBLIC).unwrap();
    let mut key = public["rsa1"].clone();
    key["kid"] = "rsa1".into();
    key["use"] = "sig".into();
    let document = json!({"keys": [key]}).to_string();
    let task = tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let document = document.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
                    if tcp.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{document}",
                    document.len()
                );
                let _ = tcp.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, task)
}

fn sign(scope: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({
        "iss": ISSUER, "sub": "alice", "aud": AUDIENCE, "scope": scope,
        "client_id": "gateway-it", "iat": now, "exp": now + 300,
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa1".into());
    let key = EncodingKey::from_rsa_pem(RSA1).unwrap();
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_flags_put_a_guard_in_front_of_every_child() {
    let (jwks, jwks_task) = serve_jwks().await;
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--pool-size",
        "1",
        "--auth-issuer",
        ISSUER,
        "--auth-jwks-url",
        &jwks,
        "--auth-audience",
        AUDIENCE,
        "--auth-scope",
        SCOPE,
    ];
    let mut gateway = Binary::serve(args).await;
    let url = gateway.url.clone();

    // No token: 401 and the challenge, before any child is started.
    let (status, rest) = post_initialize(&url, "127.0.0.1", "").await;
    assert_eq!(status, 401, "{rest}");
    let challenge = rest
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("www-authenticate:"))
        .unwrap_or_else(|| panic!("no challenge: {rest}"));
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    // A token without the scope: 403.
    let wrong = format!("Authorization: Bearer {}\r\n", sign("other"));
    let (status, rest) = post_initialize(&url, "127.0.0.1", &wrong).await;
    assert_eq!(status, 403, "{rest}");

    // With the token, both families reach a child.
    for family in [Family::Session, Family::PerRequest] {
        let client = Client::builder(&url)
            .family(family)
            .header("authorization", format!("Bearer {}", sign(SCOPE)))
            .request_timeout(LIMIT)
            .client_info("gateway-it", "0")
            .build()
            .unwrap();
        let mut conn = within(client.connect()).await.unwrap();
        if family == Family::Session {
            let init = initialize(&mut conn).await;
            assert!(!init.is_error(), "{init:?}");
        }
        gateway.children.push(child_pid(&mut conn, 1).await);
    }
    jwks_task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_host_answers_the_public_name_and_no_other() {
    let args = ["--addr", "127.0.0.1:0", "--allowed-host", "mcp.example.com"];
    let gateway = Binary::serve(args).await;
    let (status, rest) = post_initialize(&gateway.url, "mcp.example.com", "").await;
    assert_eq!(status, 200, "{rest}");
    let (status, rest) = post_initialize(&gateway.url, "rebound.example.net", "").await;
    assert_eq!(status, 403, "{rest}");
}

#[test]
fn auth_flags_given_in_part_are_refused_at_start() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args(["serve", "--addr", "127.0.0.1:0", "--auth-issuer", ISSUER])
        .args([OsStr::new("--"), OsStr::new("python3"), OsStr::new(CHILD)])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--auth-issuer, --auth-jwks-url and --auth-audience go together"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "it listened: {:?}", output.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_with_the_request_log_name_each_requests_session() {
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--log-format",
        "json",
        "--request-log",
    ];
    let mut gateway = Binary::serve_logged(args).await;
    let (mut conn, init) = session(&gateway.url).await;
    assert!(!init.is_error(), "{init:?}");
    let session_id = conn.session_id().expect("a session").to_owned();
    gateway.children.push(child_pid(&mut conn, 1).await);
    drop(conn);
    let log = gateway.log().await;
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect();
    let call = lines.iter().find(|line| {
        line["target"] == "mcp_streamable_server::requests"
            && line.to_string().contains("tools/call")
    });
    let call = call.unwrap_or_else(|| panic!("no request line for the call in:\n{log}"));
    assert!(call.to_string().contains(&session_id), "{call}");
}
