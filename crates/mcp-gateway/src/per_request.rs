//! A per-request (2026-07-28) client's request, served by a warm child of the pool: its
//! `_meta` keys of the protocol taken out (the child speaks a session revision), relayed under
//! the link's id, and its result completed as the revision wants (`resultType`, the server's
//! name in `_meta`). A client that leaves cancels the request at the child. `server/discover`
//! is answered from the child's `initialize`.

use mcp_jsonrpc::{Id, Message, Request, Response, to_raw_value};
use mcp_streamable_protocol::meta;
use mcp_streamable_server::{ProtocolVersion, ServerConnection, ServerSender};
use mcp_transport::Connection;
use serde_json::{Value, json};

use crate::pool::Warm;
use crate::relay::{answer, finish, refusal};
use crate::shared::Shared;

/// The prefix of the `_meta` keys the per-request revision defines.
const PROTOCOL_META: &str = "io.modelcontextprotocol/";

/// The methods whose 2026-07-28 results must say how they may be cached (`ttlMs`,
/// `cacheScope`): a child of a session revision never says, so the gateway does.
const CACHEABLE: &[&str] = &[
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "server/discover",
    "tools/list",
];

/// Serves the connection's one request.
pub(crate) async fn serve(mut conn: ServerConnection, shared: &Shared) {
    let client = conn.sender();
    let Ok(Some(Message::Request(request))) = conn.recv().await else {
        return;
    };
    let warm = match shared.warm().await {
        Ok(warm) => warm,
        Err(why) => return answer(&client, refusal(&request.id, &why)).await,
    };
    let cacheable = CACHEABLE.contains(&request.method.as_str());
    let response = if request.method == "server/discover" {
        Some(discover(request.id, &warm))
    } else {
        relay(&mut conn, &client, &warm, request, shared).await
    };
    if let Some(response) = response {
        answer(&client, complete(response, &warm, cacheable)).await;
    }
}

/// Relays `request` to the child until its response; `None` when the client left first (the
/// child is told the request was cancelled).
async fn relay(
    conn: &mut ServerConnection,
    client: &ServerSender,
    warm: &Warm,
    mut request: Request,
    shared: &Shared,
) -> Option<Response> {
    strip_protocol_meta(&mut request);
    let id = request.id.clone();
    let mut call = match warm.link.call(request).await {
        Ok(call) => call,
        Err(why) => return Some(refusal(&id, &why)),
    };
    let timeout = shared.options.timeout();
    let answered = tokio::select! {
        finished = finish(&mut call, &id, client, timeout) => Some(finished),
        () = left(conn) => None,
    };
    match answered {
        Some(Ok(response)) => response,
        Some(Err(why)) => Some(refusal(&id, &why)),
        None => {
            call.cancel("the client closed its stream").await;
            None
        }
    }
}

/// Returns when the client has gone: the service delivers `notifications/cancelled`, then the
/// connection's end.
async fn left(conn: &mut ServerConnection) {
    loop {
        match conn.recv().await {
            Ok(Some(Message::Notification(n))) if n.method == "notifications/cancelled" => return,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
}

/// `server/discover`: the versions the gateway serves, and what the child said it can do.
fn discover(id: Id, warm: &Warm) -> Response {
    let mut versions: Vec<&str> = ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect();
    versions.sort_unstable_by(|a, b| b.cmp(a));
    let mut result = json!({
        "supportedVersions": versions,
        "capabilities": warm.initialized["capabilities"].clone(),
    });
    if let Some(instructions) = warm.initialized.get("instructions") {
        result["instructions"] = instructions.clone();
    }
    let raw = to_raw_value(&result).expect("a JSON object");
    Response::success(id, raw)
}

/// A successful result as the per-request revision has it: `resultType` (`complete` unless
/// the child said otherwise), the child's `serverInfo` under `_meta` and, for a `cacheable`
/// method, `ttlMs` 0 and `cacheScope` `private` unless the child said otherwise: immediately
/// stale and for this client alone, as the gateway cannot know how long the child's answer
/// holds nor whether it is the same for every user.
fn complete(response: Response, warm: &Warm, cacheable: bool) -> Response {
    let (Some(id), Ok(raw)) = (response.id(), response.result()) else {
        return response;
    };
    let Ok(Value::Object(mut result)) = serde_json::from_str::<Value>(raw.get()) else {
        return response;
    };
    let id = id.clone();
    result
        .entry("resultType")
        .or_insert_with(|| json!("complete"));
    if cacheable {
        result.entry("ttlMs").or_insert_with(|| json!(0));
        result
            .entry("cacheScope")
            .or_insert_with(|| json!("private"));
    }
    let server = warm.initialized["serverInfo"].clone();
    let meta = result.entry("_meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert(meta::SERVER_INFO.to_owned(), server);
    }
    let raw = to_raw_value(&result).expect("a JSON object");
    Response::success(id, raw)
}

/// Takes the per-request revision's keys out of the request's `_meta`: the child speaks a
/// session revision, in which the gateway's `initialize` said them once for all.
fn strip_protocol_meta(request: &mut Request) {
    let Some(raw) = request.params.as_ref() else {
        return;
    };
    if !raw.get().contains(PROTOCOL_META) {
        return;
    }
    let Ok(mut params) = serde_json::from_str::<Value>(raw.get()) else {
        return;
    };
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        meta.retain(|key, _| !key.starts_with(PROTOCOL_META));
        if meta.is_empty() {
            params.as_object_mut().map(|p| p.remove("_meta"));
        }
    }
    request.params = to_raw_value(&params).ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocols_meta_keys_go_and_the_others_stay() {
        let params = json!({"name": "echo", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "c"},
            "progressToken": 5,
        }});
        let mut request = Request::new(1, "tools/call", to_raw_value(&params).ok());
        strip_protocol_meta(&mut request);
        let params: Value = request.parse_params().unwrap();
        assert_eq!(
            params,
            json!({"name": "echo", "_meta": {"progressToken": 5}})
        );
    }

    #[test]
    fn an_empty_meta_goes_too() {
        let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        let mut request = Request::new(1, "tools/list", to_raw_value(&params).ok());
        strip_protocol_meta(&mut request);
        let params: Value = request.parse_params().unwrap();
        assert_eq!(params, json!({}));
    }
}
