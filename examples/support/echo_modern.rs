//! What `echo_server` adds for the per-request protocol of 2026-07-28: listen streams that
//! hear every node, the `confirm` tool's input-required rounds with a sealed `requestState`,
//! `notify_change`, and the `Mcp-Param-*` declarations of its tools.

use std::sync::OnceLock;

use mcp_streamable_http::jsonrpc::{ErrorObject, Request as RpcRequest, code};
use mcp_streamable_http::server::{
    Change, InMemoryBus, NotificationBus, ServerConnection, StateSealer, Subscriptions, ToolHeaders,
};
use serde_json::{Value, json};

/// What the per-request tools share across the process: its listen streams and the key its
/// states are sealed with.
struct Shared {
    subscriptions: Subscriptions,
    sealer: StateSealer,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// Sets the bus of the listen streams and the key of `confirm`'s states, once, before the
/// server serves: with several nodes, their bus (`RedisBackend::notification_bus`) and one key
/// for all, so that a retry is verified on whichever node it lands. Unset, the process has a
/// bus of its own and a random key.
pub fn configure(bus: impl NotificationBus, sealer: StateSealer) {
    let _ = SHARED.set(Shared {
        subscriptions: Subscriptions::new(bus),
        sealer,
    });
}

fn shared() -> &'static Shared {
    SHARED.get_or_init(|| Shared {
        subscriptions: Subscriptions::new(InMemoryBus::default()),
        sealer: StateSealer::new("local", &random_key()).expect("a 32-byte key"),
    })
}

/// 32 random bytes from the operating system: a key no other process has.
pub fn random_key() -> [u8; 32] {
    let mut key = [0; 32];
    getrandom::getrandom(&mut key).expect("the operating system's random numbers");
    key
}

/// Serves `request` as a listen stream, if it opens one; gives it back otherwise.
pub async fn listen(conn: &mut ServerConnection, request: RpcRequest) -> Option<RpcRequest> {
    if request.method != "subscriptions/listen" {
        return Some(request);
    }
    shared().subscriptions.serve(conn, &request).await;
    None
}

/// Ends this process's listen streams gracefully, each with its result: at shutdown.
pub fn close_listen_streams() {
    if let Some(shared) = SHARED.get() {
        shared.subscriptions.close();
    }
}

/// The tools only the per-request protocol has.
pub fn tools() -> Vec<Value> {
    vec![
        json!({"name": "confirm", "description": "Asks the client to confirm (an input-required result), then returns the text it was given.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
        json!({"name": "notify_change", "description": "Announces that a list changed (`tools`, `prompts` or `resources`), or that the resource `uri` was updated, to the listen streams of every node.", "inputSchema": {"type": "object", "properties": {"list": {"type": "string"}, "uri": {"type": "string"}}}}),
        json!({"name": "lookup", "description": "Returns the region and the key it is given; both travel in Mcp-Param-* headers.", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "key": {"type": "integer", "x-mcp-header": "Key"},
        }}}),
    ]
}

/// The `Mcp-Param-*` declarations of every tool of `tools_list` (a `tools/list` result), for
/// `Config::tool_headers`.
pub fn tool_headers(tools_list: &Value) -> ToolHeaders {
    ToolHeaders::from_tools_list(tools_list).expect("the echo server's tools declare valid headers")
}

/// The per-request tools: `None` for a tool of another name.
pub async fn call(name: &str, params: &Value) -> Option<Result<Value, ErrorObject>> {
    let args = &params["arguments"];
    Some(match name {
        "confirm" => confirm(params),
        "notify_change" => notify_change(args).await,
        "lookup" => Ok(
            json!({"content": [{"type": "text", "text": format!("{} {}", args["region"], args["key"])}]}),
        ),
        _ => return None,
    })
}

/// The context `confirm`'s states are sealed for: a state of another tool is refused here.
const CONFIRM: &str = "tools/call confirm";

/// Round one: an input-required result asking the client to confirm, the text sealed in the
/// state. Round two (the client's answer and the state echoed): the text, if the state holds.
fn confirm(params: &Value) -> Result<Value, ErrorObject> {
    let sealer = &shared().sealer;
    let Some(state) = params["requestState"].as_str() else {
        let text = params["arguments"]["text"].as_str().unwrap_or_default();
        let state = sealer.seal(CONFIRM, text.as_bytes());
        return Ok(json!({
            "resultType": "input_required",
            "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
                "message": format!("Confirm {text:?}?"),
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            }}},
            "requestState": state,
        }));
    };
    let text = sealer
        .open(CONFIRM, state)
        .map_err(|why| ErrorObject::new(code::INVALID_PARAMS, why.to_string()))?;
    let text = String::from_utf8_lossy(&text);
    let answer = &params["inputResponses"]["confirm"];
    let confirmed = answer["content"]["ok"].as_bool() == Some(true);
    let said = if confirmed { "confirmed" } else { "declined" };
    Ok(json!({"content": [{"type": "text", "text": format!("{said}: {text}")}]}))
}

async fn notify_change(args: &Value) -> Result<Value, ErrorObject> {
    let change = match (args["list"].as_str(), args["uri"].as_str()) {
        (Some("tools"), None) => Change::ToolsListChanged,
        (Some("prompts"), None) => Change::PromptsListChanged,
        (Some("resources"), None) => Change::ResourcesListChanged,
        (None, Some(uri)) => Change::ResourceUpdated(uri.to_owned()),
        _ => {
            return Err(ErrorObject::new(
                code::INVALID_PARAMS,
                "give list (tools, prompts or resources) or uri",
            ));
        }
    };
    shared()
        .subscriptions
        .announce(change)
        .await
        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))?;
    Ok(json!({"content": [{"type": "text", "text": "announced"}]}))
}
