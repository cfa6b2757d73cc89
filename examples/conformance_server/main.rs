//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`, server
//! mode) tests: an rmcp `ServerHandler` run over this project's Streamable HTTP server through
//! `mcp-rmcp`, with every fixture the suite's server scenarios ask for.
//!
//! ```text
//! cargo run --example conformance_server -- [--addr 127.0.0.1:0]   # or MCP_ADDR=127.0.0.1:0
//! ```
//!
//! It prints `listening on http://ADDR/mcp` first and serves MCP at `/mcp` on loopback, with
//! resumable streams (an in-memory event store) and the default loopback-only `Host` and
//! `Origin` checks (DNS rebinding protection). `cargo xtask conformance` runs the suite
//! against it; `conformance/README.md` says what is checked.
//!
//! The fixtures (names, texts, schemas) are those the suite's scenarios name:
//!
//! - tools: `test_simple_text`, `test_image_content`, `test_audio_content`,
//!   `test_embedded_resource`, `test_multiple_content_types`, `test_tool_with_logging`,
//!   `test_tool_with_progress`, `test_error_handling`, `test_reconnection` (SEP-1699: closes its
//!   own stream, then answers on the resumed one), `test_sampling`, `test_elicitation`,
//!   `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`,
//!   `json_schema_2020_12_tool`;
//! - resources: `test://static-text`, `test://static-binary`, `test://watched-resource` and the
//!   template `test://template/{id}/data`, with `resources/subscribe` and `unsubscribe`;
//! - prompts: `test_simple_prompt`, `test_prompt_with_arguments`,
//!   `test_prompt_with_embedded_resource`, `test_prompt_with_image`;
//! - `logging/setLevel` (log messages below the level are not sent) and
//!   `completion/complete`;
//! - for 2026-07-28 (`conformance_server/modern.rs`): `test_mcp_param_headers`, whose `region`
//!   and `priority` arguments travel in `Mcp-Param-*` headers too, checked by the server
//!   (`Config::tool_headers`, built from the same tool list `tools/list` answers with);
//!   `test_missing_capability` (-32021 unless the client declares sampling);
//!   `test_trigger_tool_change` and `test_trigger_prompt_change`, which announce the change to
//!   every listen stream through the server's `Subscriptions` (on an `InMemoryBus`: one
//!   process; several nodes would share the Redis crate's bus); `test_streaming_elicitation`,
//!   `test_logging_tool`; the `test_input_required_result_*` tools and the
//!   `test_input_required_result_prompt` prompt, whose `requestState` is sealed with the
//!   server's `StateSealer`.
//!
//! The sealing key is random for each start unless `--state-key` (`MCP_STATE_KEY`) gives one:
//! several nodes behind one address must share it, or a retry that lands on another node than
//! the one that sealed its state is refused.
//!
//! Messages a tool sends travel on its own request's stream: progress by its token, sampling and
//! elicitation requests by rmcp's `OriginatingRequestId`, log messages because the tool marks
//! them with it (see `mcp-rmcp`'s routing rules).

// Logging, sampling and resource subscriptions are deprecated in rmcp by the protocol's 2026
// revision; the suite tests the 2025-11-25 revision, which has them.
#![allow(deprecated)]

use mcp_streamable_http::http;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Mutex;
use std::time::Duration;

use clap::Parser as _;
use mcp_streamable_http::jsonrpc::Id;
use mcp_streamable_http::server::{
    Config, InMemoryBus, InMemoryEventStore, ServerConnection, ServerSender, StateSealer,
    StreamableHttpService, Subscriptions, ToolHeaders,
};
use mcp_streamable_http::transport::Connection;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    CreateMessageRequest, ElicitRequest, GetExtensions, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam, NumberOrString,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, RequestId, ServerConfig, ServerNotification,
    ServerRequest, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{OriginatingRequestId, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use support::serve;

mod modern;
mod tools;

use modern::Modern;
use tools::{sep1034_schema, sep1330_schema, tools};

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.logs.init();
    let key = args
        .state_key
        .unwrap_or_else(support::echo_modern::random_key);
    let modern = Modern {
        subscriptions: Subscriptions::new(InMemoryBus::default()),
        sealer: StateSealer::new("conformance", &key)?,
    };
    // The server checks the `Mcp-Param-*` headers by the declarations of the very tool list
    // `tools/list` answers with, so that the two cannot drift apart.
    let headers = ToolHeaders::from_tools_list(&json!({"tools": tools()}))?;
    let config = Config::default()
        .event_store(InMemoryEventStore::default())
        .tool_headers(headers);
    let service = StreamableHttpService::new(config, move |conn, parts| {
        session(conn, parts, modern.clone())
    });

    serve::serve(args.addr, service).await
}

/// Where the server listens unless told: loopback, a port the OS picks (the suite reads the
/// address from the first line).
const ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// The server the official MCP conformance suite tests (`cargo xtask conformance`); every flag
/// can also be set by the environment variable shown beside it.
#[derive(Debug, clap::Parser)]
#[command(name = "conformance_server")]
struct Args {
    /// Where to listen; port 0 picks a free one.
    #[arg(long, env = "MCP_ADDR", default_value_t = ADDR)]
    addr: SocketAddr,
    /// The key that seals `requestState`, 64 hexadecimal digits, shared by every node of one
    /// deployment; random for each start when not given.
    #[arg(long, env = "MCP_STATE_KEY", value_name = "HEX", hide_env_values = true,
        value_parser = support::cli::state_key)]
    state_key: Option<[u8; 32]>,
    #[command(flatten)]
    logs: mcp_streamable_telemetry::Logs,
}

/// One session: one rmcp service over the session's connection.
async fn session(mut conn: ServerConnection, parts: http::request::Parts, modern: Modern) {
    // 2026-07-28 removes `ping`, but rmcp 3.11 answers a ping that comes before any other
    // request (its rule for pings ahead of `initialize`), and a per-request connection's one
    // request is always first: refuse it here, as the revision asks (404, -32601).
    if conn.sender().version().is_per_request()
        && parts.headers.get("mcp-method").is_some_and(|m| m == "ping")
    {
        return refuse_removed_method(&mut conn).await;
    }
    // The handler keeps the session's sender to end a request's stream (SEP-1699 polling), the
    // one thing of the transport rmcp has no API for.
    let handler = Conformance::new(conn.sender(), modern.clone());
    // 2026-07-28 listen streams are served by the server crate's `Subscriptions`, which hear
    // the changes the trigger tools announce.
    let transport =
        mcp_streamable_http::rmcp_adapter::server(conn).listen_with(modern.subscriptions);
    match handler.serve(transport).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(err) => tracing::debug!(error = %err, "the session ended before initialize"),
    }
}

/// Answers the connection's one request with -32601 (method not found).
async fn refuse_removed_method(conn: &mut ServerConnection) {
    use mcp_streamable_http::jsonrpc::{ErrorObject, Message, Response};
    use mcp_streamable_http::transport::{Outgoing, Sender as _};
    let Ok(Some(Message::Request(request))) = conn.recv().await else {
        return;
    };
    let error = ErrorObject::new(
        -32601,
        format!("{} is not a method of 2026-07-28", request.method),
    );
    let answer = Response::error(Some(request.id.clone()), error);
    let _ = conn
        .sender()
        .send(Outgoing::new(answer).related_to(request.id))
        .await;
}

/// The conformance fixtures of one session.
struct Conformance {
    sender: ServerSender,
    /// The fixtures of the per-request revision.
    modern: Modern,
    /// The level `logging/setLevel` set: less severe messages are not sent.
    level: Mutex<LoggingLevel>,
    /// The resources the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
}

impl Conformance {
    fn new(sender: ServerSender, modern: Modern) -> Conformance {
        Conformance {
            sender,
            modern,
            level: Mutex::new(LoggingLevel::Debug),
            subscriptions: Mutex::default(),
        }
    }

    /// Sends a log message at level info on the stream of the request being served, unless the
    /// client asked for more severe messages only.
    async fn log(&self, context: &RequestContext<RoleServer>, text: &str) -> Result<(), ErrorData> {
        if severity(LoggingLevel::Info) < severity(*self.level.lock().unwrap()) {
            return Ok(());
        }
        let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(text))
            .with_logger("conformance_server");
        let mut log =
            ServerNotification::LoggingMessageNotification(LoggingMessageNotification::new(param));
        log.extensions_mut()
            .insert(OriginatingRequestId(context.id.clone()));
        context.peer.send_notification(log).await.map_err(internal)
    }

    async fn progress(&self, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let token = context.meta.get_progress_token();
        for step in [0.0, 50.0, 100.0] {
            if step > 0.0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if let Some(token) = &token {
                let param = ProgressNotificationParam::new(token.clone(), step)
                    .with_total(100.0)
                    .with_message(format!("Completed step {step} of 100"));
                context
                    .peer
                    .notify_progress(param)
                    .await
                    .map_err(internal)?;
            }
        }
        Ok(())
    }

    /// SEP-1699: ends the connection of this call's stream; the client reconnects with GET and
    /// `Last-Event-ID` and gets the result from the event store, or live if it comes later.
    async fn reconnection(&self, context: &RequestContext<RoleServer>) {
        if !self.sender.close_stream(&our_id(&context.id)) {
            tracing::warn!(id = %context.id, "test_reconnection: no stream to close");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// Sends `request` to the client (on the calling request's stream, as rmcp marks it) and
    /// returns the client's result as JSON.
    async fn ask(
        &self,
        context: &RequestContext<RoleServer>,
        request: ServerRequest,
    ) -> Result<Value, ErrorData> {
        let result = context.peer.send_request(request).await.map_err(internal)?;
        serde_json::to_value(result).map_err(internal)
    }

    async fn elicit(
        &self,
        context: &RequestContext<RoleServer>,
        message: &str,
        schema: Value,
    ) -> Result<Value, ErrorData> {
        let params =
            from_json(json!({"mode": "form", "message": message, "requestedSchema": schema}))?;
        self.ask(
            context,
            ServerRequest::ElicitRequest(ElicitRequest::new(params)),
        )
        .await
    }
}

impl ServerHandler for Conformance {
    fn get_info(&self) -> ServerConfig {
        let capabilities = from_json(json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true},
            "prompts": {"listChanged": true},
            "logging": {},
            "completions": {},
        }))
        .expect("valid capabilities");
        ServerConfig::new(capabilities).with_server_info(
            from_json(json!({"name": "mcp-streamable-http-conformance", "version": env!("CARGO_PKG_VERSION")}))
                .expect("valid implementation info"),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        complete(json!({"tools": tools()}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(response) = self.modern.call_tool(&request, &context).await {
            return response;
        }
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let text = |t: &str| json!([{"type": "text", "text": t}]);
        let content = match &*request.name {
            "test_simple_text" => text("This is a simple text response for testing."),
            "test_image_content" => {
                json!([{"type": "image", "data": PNG, "mimeType": "image/png"}])
            }
            "test_audio_content" => {
                json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])
            }
            "test_embedded_resource" => json!([{"type": "resource", "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            }}]),
            "test_multiple_content_types" => json!([
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": json!({"test": "data", "value": 123}).to_string(),
                }},
            ]),
            "test_tool_with_logging" => {
                self.log(&context, "Tool execution started").await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
                self.log(&context, "Tool processing data").await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
                self.log(&context, "Tool execution completed").await?;
                text("Tool with logging executed successfully")
            }
            "test_tool_with_progress" => {
                self.progress(&context).await?;
                let token = context.meta.get_progress_token();
                text(&token.map_or_else(|| "no progress token".into(), |t| t.0.to_string()))
            }
            "test_error_handling" => {
                let mut result = CallToolResult::error(from_json(text(
                    "This tool intentionally returns an error for testing",
                ))?);
                result.is_error = Some(true);
                return Ok(result.into());
            }
            "test_reconnection" => {
                self.reconnection(&context).await;
                text(
                    "Reconnection test completed successfully. If you received this, the client \
                     properly reconnected after stream closure.",
                )
            }
            "test_sampling" => {
                let prompt = args["prompt"].as_str().unwrap_or_default();
                let params = from_json(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100,
                }))?;
                let request =
                    ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
                let answer = self.ask(&context, request).await?;
                let reply = answer["content"]["text"].as_str().unwrap_or("No response");
                text(&format!("LLM response: {reply}"))
            }
            "test_elicitation" => {
                let message = args["message"]
                    .as_str()
                    .unwrap_or("Please provide your information");
                let answer = self
                    .elicit(
                        &context,
                        message,
                        json!({
                            "type": "object",
                            "properties": {
                                "username": {"type": "string", "description": "User's response"},
                                "email": {"type": "string", "description": "User's email address"},
                            },
                            "required": ["username", "email"],
                        }),
                    )
                    .await?;
                text(&format!(
                    "User response: action={}, content={}",
                    answer["action"].as_str().unwrap_or_default(),
                    answer.get("content").unwrap_or(&json!({}))
                ))
            }
            "test_elicitation_sep1034_defaults" => {
                let message = "Please review and update the form fields with defaults";
                let answer = self.elicit(&context, message, sep1034_schema()).await?;
                text(&elicitation_completed(&answer))
            }
            "test_elicitation_sep1330_enums" => {
                let message = "Please select options from the enum fields";
                let answer = self.elicit(&context, message, sep1330_schema()).await?;
                text(&elicitation_completed(&answer))
            }
            "json_schema_2020_12_tool" => {
                text(&format!("JSON Schema 2020-12 tool called with: {args}"))
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool: {other}"),
                    None,
                ));
            }
        };
        Ok(CallToolResult::success(from_json(content)?).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resource = |uri: &str, name: &str, title: &str, description: &str, mime: &str| json!({"uri": uri, "name": name, "title": title, "description": description, "mimeType": mime});
        complete(json!({"resources": [
            resource("test://static-text", "static-text", "Static Text Resource", "A static text resource for testing", "text/plain"),
            resource("test://static-binary", "static-binary", "Static Binary Resource", "A static binary resource (image) for testing", "image/png"),
            resource("test://watched-resource", "watched-resource", "Watched Resource", "A resource clients can subscribe to", "text/plain"),
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        complete(json!({"resourceTemplates": [{
            "uriTemplate": "test://template/{id}/data",
            "name": "template",
            "title": "Resource Template",
            "description": "A resource template with parameter substitution",
            "mimeType": "application/json",
        }]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
            }
            "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
            "test://watched-resource" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"})
            }
            _ => match template_id(uri) {
                Some(id) => json!({
                    "uri": uri,
                    "mimeType": "application/json",
                    "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string(),
                }),
                None => {
                    return Err(ErrorData::invalid_params(
                        "Resource not found",
                        Some(json!({"uri": uri})),
                    ));
                }
            },
        };
        Ok(complete::<ReadResourceResult>(json!({"contents": [contents]}))?.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.lock().unwrap().insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.lock().unwrap().remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let argument = |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
        let mut prompts = json!([
            {"name": "test_simple_prompt", "title": "Simple Test Prompt", "description": "A simple prompt without arguments"},
            {"name": "test_prompt_with_arguments", "title": "Prompt With Arguments", "description": "A prompt with required arguments",
             "arguments": [argument("arg1", "First test argument"), argument("arg2", "Second test argument")]},
            {"name": "test_prompt_with_embedded_resource", "title": "Prompt With Embedded Resource", "description": "A prompt that includes an embedded resource",
             "arguments": [argument("resourceUri", "URI of the resource to embed")]},
            {"name": "test_prompt_with_image", "title": "Prompt With Image", "description": "A prompt that includes image content"},
        ]);
        if let Value::Array(list) = &mut prompts {
            list.extend(modern::prompts());
        }
        complete(json!({"prompts": prompts}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if let Some(response) = self.modern.get_prompt(&request) {
            return response;
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let arg = |name: &str| args[name].as_str().unwrap_or_default().to_owned();
        let user = |content: Value| json!({"role": "user", "content": content});
        let text = |t: &str| json!({"type": "text", "text": t});
        let messages = match request.name.as_str() {
            "test_simple_prompt" => json!([user(text("This is a simple prompt for testing."))]),
            "test_prompt_with_arguments" => json!([user(text(&format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            )))]),
            "test_prompt_with_embedded_resource" => json!([
                user(json!({"type": "resource", "resource": {
                    "uri": arg("resourceUri"),
                    "mimeType": "text/plain",
                    "text": "Embedded resource content for testing.",
                }})),
                user(text("Please process the embedded resource above.")),
            ]),
            "test_prompt_with_image" => json!([
                user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
                user(text("Please analyze the image above.")),
            ]),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown prompt: {other}"),
                    None,
                ));
            }
        };
        Ok(complete::<rmcp::model::GetPromptResult>(json!({"messages": messages}))?.into())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.level.lock().unwrap() = request.level;
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        // Suggestions for the prompt arguments, by prefix; nothing for anything else.
        let typed = request.argument.value.to_lowercase();
        let values: Vec<&str> = ["paris", "park", "party"]
            .into_iter()
            .filter(|v| v.starts_with(&typed))
            .collect();
        let values = if request.argument.name.starts_with("arg") {
            values
        } else {
            Vec::new()
        };
        complete(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
    }
}

fn elicitation_completed(answer: &Value) -> String {
    format!(
        "Elicitation completed: action={}, content={}",
        answer["action"].as_str().unwrap_or_default(),
        answer.get("content").unwrap_or(&json!({}))
    )
}

/// The `{id}` of `test://template/{id}/data`.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// The rank of a level, least severe first.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// rmcp's request id as this project's.
fn our_id(id: &RequestId) -> Id {
    match id {
        NumberOrString::Number(n) => Id::from(*n),
        NumberOrString::String(s) => Id::from(&**s),
    }
}

/// An rmcp model value from its JSON form: the fixtures are written as the wire shows them.
/// A result built from JSON, marked complete: 2026-07-28 requires `resultType` on every result,
/// and rmcp leaves it out again for peers of earlier versions.
fn complete<T: DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    value["resultType"] = json!("complete");
    from_json(value)
}

fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(internal)
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}
