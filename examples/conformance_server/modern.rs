//! The fixtures of the 2026-07-28 scenarios (the per-request protocol): a tool that mirrors an
//! argument in an `Mcp-Param-*` header (SEP-2243), the stateless diagnostics of
//! `server-stateless` (SEP-2575) and the input-required rounds (SEP-2322), their `requestState`
//! sealed with the server crate's `StateSealer` so that any node holding the key accepts it.

use mcp_streamable_http::server::{Change, StateSealer, Subscriptions};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequests, InputRequiredResult,
    InputResponses,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use super::{complete, from_json};

/// What the 2026-07-28 fixtures share across the requests of a node: its listen streams and
/// the key that seals `requestState`.
#[derive(Clone, Debug)]
pub(crate) struct Modern {
    pub(crate) subscriptions: Subscriptions,
    pub(crate) sealer: StateSealer,
}

/// The tools of the 2026-07-28 scenarios, as `tools/list` gives them.
pub(crate) fn tools() -> Vec<Value> {
    let none = json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str| json!({"name": name, "description": description, "inputSchema": none});
    vec![
        json!({
            "name": "test_mcp_param_headers",
            "description": "Echoes its arguments; `region` and `priority` travel in Mcp-Param-* headers too (SEP-2243)",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "priority": {"type": "integer", "x-mcp-header": "Priority"},
                },
                "required": ["region"],
            },
        }),
        tool(
            "test_missing_capability",
            "Needs the client's sampling capability: without it, -32021",
        ),
        tool(
            "test_trigger_tool_change",
            "Announces that the tool list changed to every listen stream",
        ),
        tool(
            "test_trigger_prompt_change",
            "Announces that the prompt list changed to every listen stream",
        ),
        tool(
            "test_streaming_elicitation",
            "Asks for input with an input-required result, never with a request on the stream",
        ),
        tool(
            "test_logging_tool",
            "Sends no log message: a 2026-07-28 request gets them only when its _meta names a level",
        ),
        tool(
            "test_input_required_result_elicitation",
            "Asks the user's name (input-required, elicitation)",
        ),
        tool(
            "test_input_required_result_sampling",
            "Asks a model a question (input-required, sampling)",
        ),
        tool(
            "test_input_required_result_list_roots",
            "Asks the client's roots (input-required, roots/list)",
        ),
        tool(
            "test_input_required_result_request_state",
            "Asks a confirmation and checks the sealed requestState it gave",
        ),
        tool(
            "test_input_required_result_multiple_inputs",
            "Asks for an elicitation, a sampling and the roots at once",
        ),
        tool(
            "test_input_required_result_multi_round",
            "Asks two questions, one round each, its requestState sealed anew each round",
        ),
        tool(
            "test_input_required_result_capabilities",
            "Asks only for what the client's capabilities allow",
        ),
        tool(
            "test_input_required_result_tampered_state",
            "Refuses a requestState that is not the one it sealed, with -32602",
        ),
    ]
}

/// The prompt of `input-required-result-non-tool-request`, as `prompts/list` gives it.
pub(crate) fn prompts() -> Vec<Value> {
    vec![json!({
        "name": "test_input_required_result_prompt",
        "title": "Prompt With Input Required",
        "description": "Asks the client for context (input-required) before it is given",
    })]
}

impl Modern {
    /// Serves the tool `request` names if it is one of these fixtures.
    pub(crate) async fn call_tool(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let responses = request.input_responses.as_ref();
        let state = request.request_state.as_deref();
        let context_of = format!("tools/call {}", request.name);
        let result = match &*request.name {
            "test_mcp_param_headers" => {
                let args = Value::Object(request.arguments.clone().unwrap_or_default());
                text(&format!("Headers matched the arguments: {args}"))
            }
            "test_missing_capability" => {
                let declared = capabilities(context).is_some_and(|c| c.sampling.is_some());
                if !declared {
                    return Some(Err(ErrorData::new(
                        ErrorCode(-32021),
                        "test_missing_capability needs the client's sampling capability",
                        Some(json!({"requiredCapabilities": {"sampling": {}}})),
                    )));
                }
                text("The client declared sampling")
            }
            "test_trigger_tool_change" => self.announce(Change::ToolsListChanged).await,
            "test_trigger_prompt_change" => self.announce(Change::PromptsListChanged).await,
            "test_streaming_elicitation" => match answer(responses, "confirm") {
                Some(content) => text(&format!("Confirmed: {content}")),
                None => input_required(requests(json!({"confirm": confirm()})), None),
            },
            "test_logging_tool" => {
                // A 2026-07-28 request is sent log messages only when its `_meta` names a
                // level; the suite checks that none come when it names none.
                text("Logging tool ran")
            }
            "test_input_required_result_elicitation" => match answer(responses, "user_name") {
                Some(content) if content["name"].is_string() => text(&format!(
                    "Hello, {}!",
                    content["name"].as_str().unwrap_or("")
                )),
                _ => input_required(requests(json!({"user_name": ask_name()})), None),
            },
            "test_input_required_result_sampling" => {
                match responses.and_then(|r| r.get("capital_question")) {
                    Some(reply) if reply["content"]["text"].is_string() => text(&format!(
                        "LLM response: {}",
                        reply["content"]["text"].as_str().unwrap_or("")
                    )),
                    _ => input_required(
                        requests(
                            json!({"capital_question": sampling("What is the capital of France?", 100)}),
                        ),
                        None,
                    ),
                }
            }
            "test_input_required_result_list_roots" => {
                match responses.and_then(|r| r.get("client_roots")) {
                    Some(reply) if reply["roots"].is_array() => {
                        text(&format!("Client roots: {}", roots(reply)))
                    }
                    _ => input_required(requests(json!({"client_roots": list_roots()})), None),
                }
            }
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                if let Some(state) = state {
                    if let Err(refused) = self.open(&context_of, state) {
                        return Some(Err(refused));
                    }
                    if answer(responses, "confirm").is_some() {
                        return Some(text("state-ok: the requestState was verified"));
                    }
                }
                let state = self.sealer.seal(&context_of, b"{\"round\":1}");
                input_required(requests(json!({"confirm": confirm()})), Some(state))
            }
            "test_input_required_result_multiple_inputs" => {
                let given = state.map(|s| self.open(&context_of, s)).transpose();
                if let Err(refused) = given {
                    return Some(Err(refused));
                }
                let all = ["user_name", "greeting", "client_roots"]
                    .iter()
                    .all(|key| responses.is_some_and(|r| r.contains_key(*key)));
                if all && state.is_some() {
                    text("All three inputs received")
                } else {
                    let asked = json!({
                        "user_name": ask_name(),
                        "greeting": sampling("Generate a greeting", 50),
                        "client_roots": list_roots(),
                    });
                    let state = self.sealer.seal(&context_of, b"{\"round\":1}");
                    input_required(requests(asked), Some(state))
                }
            }
            "test_input_required_result_multi_round" => {
                self.multi_round(&context_of, responses, state)
            }
            "test_input_required_result_capabilities" => {
                let caps = capabilities(context).unwrap_or_default();
                let mut asked = serde_json::Map::new();
                if caps.sampling.is_some() {
                    asked.insert("question".into(), sampling("Say hello", 20));
                }
                if caps.elicitation.is_some() {
                    asked.insert("user_name".into(), ask_name());
                }
                if caps.roots.is_some() {
                    asked.insert("client_roots".into(), list_roots());
                }
                let answered = responses.is_some_and(|r| asked.keys().all(|k| r.contains_key(k)));
                if asked.is_empty() || answered {
                    text("Nothing more to ask of this client")
                } else {
                    input_required(requests(Value::Object(asked)), None)
                }
            }
            _ => return None,
        };
        Some(result)
    }

    /// `test_input_required_result_prompt`, if `request` names it.
    pub(crate) fn get_prompt(
        &self,
        request: &GetPromptRequestParams,
    ) -> Option<Result<GetPromptResponse, ErrorData>> {
        if request.name != "test_input_required_result_prompt" {
            return None;
        }
        let given = answer(request.input_responses.as_ref(), "user_context");
        Some(match given {
            Some(content) => {
                let context = content["context"].as_str().unwrap_or_default();
                complete::<GetPromptResult>(json!({"messages": [{"role": "user", "content": {
                    "type": "text",
                    "text": format!("Answer with this context in mind: {context}"),
                }}]}))
                .map(Into::into)
            }
            None => {
                let asked = json!({"user_context": elicit(
                    "What context should the prompt use?",
                    json!({"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}),
                )});
                requests(asked).map(|r| InputRequiredResult::new(Some(r), None).into())
            }
        })
    }

    /// Two questions, one round each; the state says which round the client is in.
    fn multi_round(
        &self,
        context: &str,
        responses: Option<&InputResponses>,
        state: Option<&str>,
    ) -> Result<CallToolResponse, ErrorData> {
        let round = match state {
            Some(state) => {
                let payload = self.open(context, state)?;
                let payload: Value = serde_json::from_slice(&payload).unwrap_or_default();
                payload["round"].as_u64().unwrap_or(1)
            }
            None => 0,
        };
        match (
            round,
            answer(responses, "step1"),
            answer(responses, "step2"),
        ) {
            (1, Some(step1), _) => {
                let name = step1["name"].as_str().unwrap_or_default();
                let payload = json!({"round": 2, "name": name}).to_string();
                let asked = json!({"step2": elicit(
                    "Step 2: What is your favorite color?",
                    json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}),
                )});
                input_required(
                    requests(asked),
                    Some(self.sealer.seal(context, payload.as_bytes())),
                )
            }
            (2, _, Some(step2)) => text(&format!(
                "Both steps answered: color {}",
                step2["color"].as_str().unwrap_or_default()
            )),
            _ => {
                let asked = json!({"step1": elicit(
                    "Step 1: What is your name?",
                    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                )});
                input_required(
                    requests(asked),
                    Some(self.sealer.seal(context, b"{\"round\":1}")),
                )
            }
        }
    }

    /// The payload of a state this server sealed for `context`; any other is refused with
    /// -32602, whichever node sealed it, as long as it holds the key.
    fn open(&self, context: &str, state: &str) -> Result<Vec<u8>, ErrorData> {
        self.sealer
            .open(context, state)
            .map_err(|why| ErrorData::invalid_params(why.to_string(), None))
    }

    async fn announce(&self, change: Change) -> Result<CallToolResponse, ErrorData> {
        let told = format!("Announced {change:?} to every listen stream");
        self.subscriptions
            .announce(change)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        text(&told)
    }
}

/// The capabilities the request's `_meta` declares.
fn capabilities(context: &RequestContext<RoleServer>) -> Option<ClientCapabilities> {
    context.meta.client_capabilities()
}

/// The `content` of an accepted elicitation answered under `key`.
fn answer<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a Value> {
    let reply = responses?.get(key)?;
    (reply["action"] == "accept" && reply["content"].is_object()).then(|| &reply["content"])
}

fn roots(reply: &Value) -> String {
    let uris: Vec<&str> = reply["roots"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|root| root["uri"].as_str())
        .collect();
    uris.join(", ")
}

fn text(text: &str) -> Result<CallToolResponse, ErrorData> {
    let content = from_json(json!([{"type": "text", "text": text}]))?;
    Ok(CallToolResult::success(content).into())
}

fn input_required(
    requests: Result<InputRequests, ErrorData>,
    state: Option<String>,
) -> Result<CallToolResponse, ErrorData> {
    Ok(InputRequiredResult::new(Some(requests?), state).into())
}

fn requests(value: Value) -> Result<InputRequests, ErrorData> {
    from_json(value)
}

fn elicit(message: &str, schema: Value) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}})
}

fn ask_name() -> Value {
    elicit(
        "What is your name?",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )
}

fn confirm() -> Value {
    elicit(
        "Please confirm",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

fn sampling(question: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
        "maxTokens": max_tokens,
    }})
}

fn list_roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}
