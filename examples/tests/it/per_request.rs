//! What `echo_server` adds for 2026-07-28 clients: listen streams that hear `notify_change`,
//! `confirm`'s input-required rounds with a sealed `requestState`, and `lookup`'s
//! `Mcp-Param-*` headers checked by the server.

use mcp_streamable_http::http;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_streamable_http::jsonrpc::Body;
use mcp_streamable_http::server::{Config, ResponseBody, StreamableHttpService};
use serde_json::{Value, json};

use support::{echo_app, echo_modern};

/// A bound on a hang, not a measure.
const PATIENCE: Duration = Duration::from_secs(10);

const MODERN: &str = "2026-07-28";

/// The echo server's service, configured as `echo_server` configures it.
fn service() -> StreamableHttpService {
    let tools = echo_modern::tool_headers(&echo_app::tools(true));
    StreamableHttpService::new(Config::default().tool_headers(tools), echo_app::session)
}

/// A 2026-07-28 request: `_meta` in the body, the headers that mirror it, and `extra` headers.
fn per_request(
    id: i64,
    method: &str,
    mut params: Value,
    extra: &[(&str, &str)],
) -> http::Request<Full<Bytes>> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let mut builder = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str() {
        builder = builder.header("mcp-name", name);
    }
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    builder
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// A response's messages as JSON, one by one, JSON or SSE.
struct Reader {
    body: ResponseBody,
    scanner: mcp_streamable_http::sse::Scanner,
    json: bool,
}

impl Reader {
    fn new(response: http::Response<ResponseBody>) -> Reader {
        let json = response.headers()["content-type"] == "application/json";
        Reader {
            body: response.into_body(),
            scanner: mcp_streamable_http::sse::Scanner::new(),
            json,
        }
    }

    async fn next(&mut self) -> Option<Value> {
        if self.json {
            let bytes = tokio::time::timeout(PATIENCE, (&mut self.body).collect())
                .await
                .ok()?
                .ok()?
                .to_bytes();
            self.json = false;
            return serde_json::from_slice(&bytes).ok();
        }
        loop {
            if let Some(event) = self.scanner.next_event().unwrap()
                && let Ok(Body::Single(message)) =
                    mcp_streamable_http::jsonrpc::parse(event.data.as_bytes())
            {
                return serde_json::from_slice(&message.to_vec()).ok();
            }
            let frame = tokio::time::timeout(PATIENCE, self.body.frame())
                .await
                .expect("a frame in time")?;
            if let Ok(data) = frame.unwrap().into_data() {
                self.scanner.feed(&data);
            }
        }
    }
}

async fn answer(service: &StreamableHttpService, request: http::Request<Full<Bytes>>) -> Value {
    let mut reader = Reader::new(service.handle(request).await);
    loop {
        let message = reader.next().await.expect("an answer");
        if message.get("id").is_some() {
            return message;
        }
    }
}

#[tokio::test]
async fn a_listen_stream_hears_notify_change_and_only_what_it_asked_for() {
    let service = service();
    let listen = per_request(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        &[],
    );
    let mut stream = Reader::new(service.handle(listen).await);
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    for (id, args) in [
        (2, json!({"list": "prompts"})),
        (3, json!({"list": "tools"})),
    ] {
        let call = per_request(
            id,
            "tools/call",
            json!({"name": "notify_change", "arguments": args}),
            &[],
        );
        let answered = answer(&service, call).await;
        assert_eq!(
            answered["result"]["content"][0]["text"], "announced",
            "{answered}"
        );
    }
    let told = stream.next().await.unwrap();
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
    assert_eq!(
        told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
}

#[tokio::test]
async fn confirm_seals_its_state_and_refuses_a_tampered_one() {
    let service = service();
    let first = per_request(
        1,
        "tools/call",
        json!({"name": "confirm", "arguments": {"text": "book it"}}),
        &[],
    );
    let round_one = answer(&service, first).await["result"].clone();
    assert_eq!(round_one["resultType"], "input_required", "{round_one}");
    assert_eq!(
        round_one["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = round_one["requestState"].as_str().unwrap().to_owned();
    let retry = |id: i64, state: &str| {
        per_request(
            id,
            "tools/call",
            json!({"name": "confirm", "arguments": {"text": "book it"},
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
            "requestState": state}),
            &[],
        )
    };
    let done = answer(&service, retry(2, &state)).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: book it");
    // Another payload under the same seal: "book all" in base64url.
    let mut fields: Vec<&str> = state.split('.').collect();
    fields[3] = "Ym9vayBhbGw";
    let swapped = fields.join(".");
    assert_ne!(swapped, state);
    for tampered in [format!("{state}-TAMPERED"), swapped, String::new()] {
        let refused = answer(&service, retry(3, &tampered)).await;
        assert_eq!(refused["error"]["code"], -32602, "{tampered}: {refused}");
    }
}

#[tokio::test]
async fn lookup_is_refused_when_its_mcp_param_headers_disagree_with_its_arguments() {
    let service = service();
    let args = json!({"name": "lookup", "arguments": {"region": "eu west", "key": 7}});
    let agreeing = per_request(
        1,
        "tools/call",
        args.clone(),
        &[("mcp-param-region", "eu west"), ("mcp-param-key", "7")],
    );
    let answered = answer(&service, agreeing).await;
    assert_eq!(
        answered["result"]["content"][0]["text"], "\"eu west\" 7",
        "{answered}"
    );
    let disagreeing = per_request(
        2,
        "tools/call",
        args,
        &[("mcp-param-region", "us"), ("mcp-param-key", "7")],
    );
    let response = service.handle(disagreeing).await;
    assert_eq!(response.status(), http::StatusCode::BAD_REQUEST);
    let refused = Reader::new(response).next().await.unwrap();
    assert_eq!(refused["error"]["code"], -32020, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp-param-region")
    );
}
