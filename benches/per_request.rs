//! A 2026-07-28 `tools/call` through the server, from bytes in to the answer out, with the
//! cost of checking its `Mcp-Param-*` headers (SPEC M8) told apart: the same call of a tool
//! whose two arguments travel in headers, with the tools' declarations given to the server
//! (every header checked against the body) and without them (nothing checked), and a call of
//! a tool with one argument and no headers beside it, as the load suite's `echo`.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService, ToolHeaders};
use mcp_transport::{Connection, Sender};
use serde_json::json;

/// Answers every request with the same small tool result.
async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    let result =
        to_raw_value(&json!({"content": [{"type": "text", "text": "ok"}]})).expect("a tool result");
    while let Ok(Some(message)) = conn.recv().await {
        if let Message::Request(r) = message {
            let _ = sender
                .send(Response::success(r.id, result.clone()).into())
                .await;
        }
    }
}

/// The `_meta` every 2026-07-28 request carries.
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"}}"#;

/// A tool whose two arguments are mirrored in `Mcp-Param-Region` and `Mcp-Param-Key`.
fn declarations() -> ToolHeaders {
    ToolHeaders::from_tools_list(&json!({"tools": [{"name": "lookup", "inputSchema": {
    "type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "key": {"type": "integer", "x-mcp-header": "Key"},
    }}}]}))
    .expect("valid declarations")
}

/// A per-request `tools/call` of `name` with `arguments`, its headers mirroring the body.
fn post(
    name: &'static str,
    arguments: &str,
    params: &[(&'static str, &'static str)],
) -> http::Request<Full<Bytes>> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{name}","arguments":{arguments},{META}}}}}"#
    );
    let mut request = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name);
    for (header, value) in params {
        request = request.header(*header, *value);
    }
    request
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request")
}

fn per_request(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let checked = StreamableHttpService::new(Config::default().tool_headers(declarations()), app);
    let unchecked = StreamableHttpService::new(Config::default(), app);
    let lookup = || {
        post(
            "lookup",
            r#"{"region":"eu-west-1","key":42}"#,
            &[("mcp-param-region", "eu-west-1"), ("mcp-param-key", "42")],
        )
    };
    let echo = || post("echo", r#"{"text":"s0-c0"}"#, &[]);
    let mut group = c.benchmark_group("per-request tools/call");
    for (name, service, request) in [
        (
            "two mirrored params, checked",
            &checked,
            &lookup as &dyn Fn() -> _,
        ),
        ("two mirrored params, not checked", &unchecked, &lookup),
        ("echo, declarations given", &checked, &echo),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let response = service.handle(request()).await;
                    assert_eq!(response.status(), 200);
                    black_box(response.into_body().collect().await.expect("the answer"));
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, per_request);
criterion_main!(benches);
