//! Integration tests of `mcp-rmcp`: rmcp services over this project's transports.

mod errors;
mod listen;

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_jsonrpc::{Body, Message};
use mcp_streamable_server::{Config, StreamableHttpService};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetExtensions,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, ServerNotification,
};
use rmcp::service::{OriginatingRequestId, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// An rmcp server with three tools: `echo`; `progress`, which reports three steps; `log`, which
/// sends a log message marked with its request, and one unmarked.
#[derive(Clone, Default)]
pub(crate) struct Tools;

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "progress"
            && let Some(token) = context.meta.get_progress_token()
        {
            for step in 1..=3 {
                let param = ProgressNotificationParam::new(token.clone(), f64::from(step));
                context
                    .peer
                    .notify_progress(param)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            }
        }
        if request.name == "caller" {
            // The HTTP request that carried this very call, as rmcp's own service gives it.
            let caller = context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.headers.get("x-caller"))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let text = caller.ok_or_else(|| {
                ErrorData::invalid_params("no http::request::Parts in the extensions", None)
            })?;
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        }
        if request.name == "log" {
            for related in [true, false] {
                let mut log = log_message(if related { "related" } else { "unrelated" });
                if related {
                    log.extensions_mut()
                        .insert(OriginatingRequestId(context.id.clone()));
                }
                context
                    .peer
                    .send_notification(log)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            }
        }
        let text = request
            .arguments
            .and_then(|a| a.get("text").cloned())
            .and_then(|t| t.as_str().map(str::to_owned));
        Ok(CallToolResult::success(vec![ContentBlock::text(
            text.unwrap_or_else(|| "done".into()),
        )])
        .into())
    }
}

/// A `notifications/message` at level info. Logging is deprecated in rmcp for the 2026 revision of
/// the protocol, not for the revisions this project serves.
#[allow(deprecated)]
fn log_message(text: &str) -> ServerNotification {
    use rmcp::model::{LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam};
    let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(text));
    ServerNotification::LoggingMessageNotification(LoggingMessageNotification::new(param))
}

fn post(session: Option<&str>, body: Value) -> http::Request<Full<Bytes>> {
    let mut b = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(id) = session {
        b = b.header("mcp-session-id", id);
    }
    b.body(Full::new(Bytes::from(body.to_string()))).unwrap()
}

/// The messages of an SSE response, until it ends.
async fn messages(response: http::Response<mcp_streamable_server::ResponseBody>) -> Vec<Message> {
    let bytes = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .expect("the stream ends within 10 s")
        .unwrap()
        .to_bytes();
    let mut scanner = mcp_sse::Scanner::new();
    scanner.feed(&bytes);
    let mut out = Vec::new();
    while let Some(event) = scanner.next_event().unwrap() {
        if let Ok(Body::Single(m)) = mcp_jsonrpc::parse(event.data.as_bytes()) {
            out.push(m);
        }
    }
    out
}

/// The Streamable HTTP service with an rmcp `Tools` server per session.
fn tools_service() -> StreamableHttpService {
    StreamableHttpService::new(Config::default(), |conn, _parts| async move {
        if let Ok(running) = Tools.serve(mcp_rmcp::server(conn)).await {
            let _ = running.waiting().await;
        }
    })
}

/// Starts a session: its id, and the answer to `initialize`.
async fn start_session(service: &StreamableHttpService) -> (String, Vec<Message>) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let response = service.handle(post(None, init)).await;
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (session, messages(response).await)
}

#[tokio::test]
async fn an_rmcp_server_over_streamable_http_relates_progress_to_its_request() {
    let service = tools_service();
    let (session, init) = start_session(&service).await;
    assert!(
        matches!(&init[..], [Message::Response(r)] if !r.is_error()),
        "{init:?}"
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        service
            .handle(post(Some(&session), initialized))
            .await
            .status(),
        202
    );

    // The progress notifications travel on the tool call's own stream, before its result.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "progress", "arguments": {}, "_meta": {"progressToken": "p"}}});
    let got = messages(service.handle(post(Some(&session), call)).await).await;
    let methods: Vec<Option<&str>> = got.iter().map(Message::method).collect();
    assert_eq!(
        methods,
        [
            Some("notifications/progress"),
            Some("notifications/progress"),
            Some("notifications/progress"),
            None
        ],
        "{got:?}"
    );
    assert!(matches!(&got[3], Message::Response(r) if !r.is_error()));

    // A notification marked with the request it serves travels on that request's stream; an
    // unmarked one goes to the standalone stream.
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "log", "arguments": {}}});
    let got = messages(service.handle(post(Some(&session), call)).await).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].method(), Some("notifications/message"));
    let params: Value = match &got[0] {
        Message::Notification(n) => n.parse_params().unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(params["data"], "related");
    assert!(matches!(&got[1], Message::Response(r) if !r.is_error()));

    // rmcp (from 3.11) refuses the methods of capabilities the handler did not advertise, and
    // the refusal comes back on the request's own stream: `Tools` advertises tools only.
    for (id, method) in [
        (5, "prompts/list"),
        (6, "resources/list"),
        (7, "completion/complete"),
    ] {
        let params = if method == "completion/complete" {
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}})
        } else {
            json!({})
        };
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let got = messages(service.handle(post(Some(&session), request)).await).await;
        let refusal = match &got[..] {
            [Message::Response(r)] => r.result().err().map(|e| e.code),
            _ => None,
        };
        assert_eq!(
            refusal,
            Some(mcp_jsonrpc::code::METHOD_NOT_FOUND),
            "{method}: {got:?}"
        );
    }

    // A request rmcp cannot read is answered, not left hanging.
    let bad = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}});
    let got = messages(service.handle(post(Some(&session), bad)).await).await;
    assert!(
        matches!(&got[..], [Message::Response(r)] if r.is_error()),
        "{got:?}"
    );
}

/// The text of a tool result's first content block, or the error message.
fn result_text(got: &[Message]) -> String {
    let value = match got {
        [Message::Response(r)] => match r.result() {
            Ok(result) => {
                serde_json::from_str::<Value>(result.get()).unwrap()["content"][0]["text"].clone()
            }
            Err(e) => Value::String(format!("error {}: {}", e.code, e.message)),
        },
        other => Value::String(format!("{other:?}")),
    };
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

#[tokio::test]
async fn each_call_reads_the_parts_of_its_own_http_request() {
    let service = tools_service();
    let (session, _) = start_session(&service).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    service.handle(post(Some(&session), initialized)).await;
    // Two calls of one session, each with its own header: each tool run sees its own request's.
    for (id, caller) in [(2, "first"), (3, "second")] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "caller", "arguments": {}}});
        let mut request = post(Some(&session), call);
        request
            .headers_mut()
            .insert("x-caller", http::HeaderValue::from_static(caller));
        let got = messages(service.handle(request).await).await;
        assert_eq!(result_text(&got), caller, "{got:?}");
    }
}

#[tokio::test]
async fn an_rmcp_client_and_server_talk_over_an_in_memory_pair() {
    let (client_end, server_end) = mcp_transport::memory::pair();
    let server = tokio::spawn(async move {
        let running = Tools.serve(mcp_rmcp::server(server_end)).await.unwrap();
        let _ = running.waiting().await;
    });
    let client = ().serve(mcp_rmcp::client(client_end)).await.unwrap();
    let mut params = CallToolRequestParams::new("echo");
    params.arguments = json!({"text": "over memory"}).as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result.content).unwrap()[0]["text"],
        "over memory"
    );
    client.cancel().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap();
}
