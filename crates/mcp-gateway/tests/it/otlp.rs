//! OTLP from the binary, both directions: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, `serve`
//! exports the server's spans and `connect` its client's, to a receiver of the test's on
//! loopback, which keeps what each export request carried.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;

use crate::binary::Binary;
use crate::harness::*;

/// One export request the receiver took: its path, content type and body.
#[derive(Debug, Clone)]
struct Export {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

impl Export {
    /// Whether its (protobuf) body carries `text`: strings are stored as their bytes.
    fn carries(&self, text: &str) -> bool {
        self.body.windows(text.len()).any(|w| w == text.as_bytes())
    }
}

/// An OTLP/HTTP receiver answering 200 to every POST; what it took, and its endpoint.
async fn receiver() -> (Arc<Mutex<Vec<Export>>>, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let taken = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&taken);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let keep = Arc::clone(&keep);
            tokio::spawn(async move {
                let mut tcp = BufReader::new(tcp);
                // HTTP/1.1 requests one after another on the connection, each answered.
                while let Some(export) = read_request(&mut tcp).await {
                    keep.lock().unwrap().push(export);
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                    if tcp.get_mut().write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (taken, endpoint)
}

/// One request: its head read line by line, its body by `content-length`; `None` at the end.
async fn read_request(tcp: &mut BufReader<tokio::net::TcpStream>) -> Option<Export> {
    let mut first = String::new();
    if tcp.read_line(&mut first).await.ok()? == 0 {
        return None;
    }
    let path = first.split(' ').nth(1)?.to_owned();
    let (mut length, mut content_type) = (0, String::new());
    for _ in 0..100 {
        let mut line = String::new();
        tcp.read_line(&mut line).await.ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "content-type" => content_type = value.trim().to_owned(),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    tcp.read_exact(&mut body).await.ok()?;
    Some(Export {
        path,
        content_type,
        body,
    })
}

/// The trace exports taken so far.
fn traces(taken: &Mutex<Vec<Export>>) -> Vec<Export> {
    let taken = taken.lock().unwrap();
    taken
        .iter()
        .filter(|e| e.path == "/v1/traces")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_its_spans_over_otlp_when_the_endpoint_is_set() {
    let (taken, endpoint) = receiver().await;
    let mut gateway = Binary::serve_exporting(["--addr", "127.0.0.1:0"], &endpoint).await;
    let (mut conn, init) = session(&gateway.url).await;
    assert!(!init.is_error(), "{init:?}");
    gateway.children.push(child_pid(&mut conn, 1).await);
    drop(conn);
    // SIGTERM: the gateway flushes what it buffered before it exits.
    let log = gateway.log().await;
    let traces = traces(&taken);
    let call = traces.iter().find(|e| e.carries("tools/call pid"));
    let call = call.unwrap_or_else(|| panic!("no span of the call in {traces:?}; log:\n{log}"));
    assert_eq!(call.content_type, "application/x-protobuf");
    assert!(call.carries("mcp-gateway"), "service.name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_exports_its_clients_spans_over_otlp_when_the_endpoint_is_set() {
    let (taken, endpoint) = receiver().await;
    let remote = Running::child("normal").await;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args(["connect", &remote.url])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "host", "version": "0"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "pid", "arguments": {}}});
    let input = format!("{initialize}\n{initialized}\n{call}\n");
    within(stdin.write_all(input.as_bytes())).await.unwrap();
    for id in [1, 2] {
        let line = within(lines.next_line()).await.unwrap().expect("an answer");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
    }
    // The end of stdin ends the bridge; the process flushes its spans before it exits.
    drop(stdin);
    let status = within(child.wait()).await.unwrap();
    assert!(status.success(), "{status}");
    let traces = traces(&taken);
    let call = traces.iter().find(|e| e.carries("tools/call pid"));
    let call = call.unwrap_or_else(|| panic!("no span of the call in {traces:?}"));
    assert!(call.carries("mcp-gateway"), "service.name");
    remote.shutdown().await;
}
