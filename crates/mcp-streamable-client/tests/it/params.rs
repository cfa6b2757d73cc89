//! M8, the client side: the `Mcp-Param-*` headers a `tools/call` carries, from the
//! declarations of the tools it listed; the tools with invalid declarations left out of the
//! result; the re-list and the one retry after a -32020. Against fake servers, and this
//! project's own server checking the headers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::{Method, Response as HttpResponse};
use mcp_jsonrpc::{Id, Message, Request, Response, to_raw_value};
use mcp_streamable_client::Family;
use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService, ToolHeaders};
use mcp_transport::Connection;
use serde_json::{Value, json};

use crate::fake::{self, Body, Fake, Req};
use crate::over::Wire;
use crate::*;

/// The tools of the fake servers: `weather` mirrors three arguments, `broken` declares a header
/// name with a space, `plain` declares nothing.
fn tools(region_header: &str) -> Value {
    json!([
        {"name": "weather", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": region_header},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"},
        }}},
        {"name": "broken", "inputSchema": {"type": "object", "properties": {
            "v": {"type": "string", "x-mcp-header": "My Region"},
        }}},
        {"name": "plain", "inputSchema": {"type": "object"}},
    ])
}

fn weather(id: i64, arguments: Value) -> Message {
    let params = json!({"name": "weather", "arguments": arguments});
    Request::new(id, "tools/call", Some(to_raw_value(&params).unwrap())).into()
}

fn result_of(id: &Value, result: Value) -> HttpResponse<Body> {
    fake::json_reply(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn header_mismatch(id: &Value) -> HttpResponse<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id,
        "error": {"code": -32020, "message": "header mismatch: mcp-param-region"}});
    fake::answer(400, "application/json", body.to_string())
}

/// A 2026-07-28 server listing [`tools`] with the `Region` header on one page, answering every
/// call.
fn lister(req: &Req) -> HttpResponse<Body> {
    match req.rpc().as_deref() {
        _ if req.method != Method::POST => fake::status(405, "no"),
        Some("tools/list") => result_of(&req.id(), json!({"tools": tools("Region")})),
        Some(_) => result_of(&req.id(), json!({"content": []})),
        None => fake::status(400, "not json-rpc"),
    }
}

fn listed_names(response: &Response) -> Vec<String> {
    let result: Value = serde_json::from_str(response.result().unwrap().get()).unwrap();
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn modern(url: &str) -> ClientConnection {
    connect(builder(url).family(Family::PerRequest)).await
}

#[tokio::test]
async fn m8_a_call_mirrors_what_the_listed_tool_declares() {
    let server = Fake::start(|req| async move { lister(&req) }).await;
    let mut conn = modern(&server.url).await;
    send(&conn, request(1, "tools/list")).await.unwrap();
    let listed = recv_response(&mut conn).await;
    assert_eq!(
        listed_names(&listed),
        ["weather", "plain"],
        "broken is left out"
    );

    let arguments = json!({"region": "Hello, 世界", "priority": 42, "verbose": null,
        "query": "SELECT 1"});
    send(&conn, weather(2, arguments)).await.unwrap();
    assert!(!recv_response(&mut conn).await.is_error());
    let plain = json!({"region": "us-west1", "verbose": false});
    send(&conn, weather(3, plain)).await.unwrap();
    assert!(!recv_response(&mut conn).await.is_error());

    let calls: Vec<Req> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_post("tools/call"))
        .collect();
    assert_eq!(calls.len(), 2);
    let [first, second] = &calls[..] else {
        unreachable!()
    };
    // Non-ASCII is base64; integers as their digits; null and unannotated are not mirrored.
    assert_eq!(
        first.header("mcp-param-region"),
        Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
    );
    assert_eq!(first.header("mcp-param-priority"), Some("42"));
    assert_eq!(first.header("mcp-param-verbose"), None);
    assert_eq!(first.header("mcp-param-query"), None);
    assert_eq!(second.header("mcp-param-region"), Some("us-west1"));
    assert_eq!(second.header("mcp-param-priority"), None, "absent");
    assert_eq!(second.header("mcp-param-verbose"), Some("false"));
    assert_eq!(
        server.count(Method::POST),
        3,
        "no re-list when nothing is refused"
    );
}

/// A server that wants `Mcp-Param-<wanted>` on every call of `weather`, listing the tools on
/// two pages (`weather` on the second), its declaration named by `declared`.
fn strict(req: &Req, wanted: &str, declared: &str) -> HttpResponse<Body> {
    let id = req.id();
    match req.rpc().as_deref() {
        Some("tools/list") if req.json()["params"]["cursor"] == "page-2" => {
            result_of(&id, json!({"tools": tools(declared)}))
        }
        Some("tools/list") => result_of(&id, json!({"tools": [], "nextCursor": "page-2"})),
        Some("tools/call") if req.header(&format!("mcp-param-{wanted}")).is_none() => {
            header_mismatch(&id)
        }
        Some(_) => result_of(&id, json!({"content": []})),
        None => fake::status(405, "no"),
    }
}

#[tokio::test]
async fn m8_a_tool_not_listed_yet_is_listed_through_every_page_then_called_again() {
    let server = Fake::start(|req| async move { strict(&req, "region", "Region") }).await;
    let mut conn = modern(&server.url).await;
    send(&conn, weather(1, json!({"region": "eu"})))
        .await
        .unwrap();
    let response = recv_response(&mut conn).await;
    assert!(!response.is_error(), "{response:?}");
    assert_eq!(response.id(), Some(&Id::from(1)));

    let log = server.requests();
    let methods: Vec<_> = log.iter().filter_map(Req::rpc).collect();
    assert_eq!(
        methods,
        ["tools/call", "tools/list", "tools/list", "tools/call"]
    );
    assert_eq!(log[2].json()["params"]["cursor"], "page-2");
    assert_eq!(log[3].header("mcp-param-region"), Some("eu"));
    assert_eq!(
        log[3].id(),
        json!(1),
        "the retry keeps the application's id"
    );
    // The transport's own listing never reaches the application.
    assert_quiet(&mut conn, std::time::Duration::from_millis(50)).await;
}

#[tokio::test]
async fn m8_a_second_32020_is_the_calls_error_response() {
    // `Other` is declared nowhere: the retry cannot carry it.
    let server = Fake::start(|req| async move { strict(&req, "other", "Region") }).await;
    let mut conn = modern(&server.url).await;
    send(&conn, weather(1, json!({"region": "eu"})))
        .await
        .unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.result().unwrap_err().code, -32020);
    let log = server.requests();
    assert_eq!(log.iter().filter(|r| r.is_post("tools/call")).count(), 2);
    assert_eq!(log.iter().filter(|r| r.is_post("tools/list")).count(), 2);
}

#[tokio::test]
async fn m8_a_relist_that_changes_the_declarations_is_followed() {
    // The first list declares `Region`; every later one `Zone`, which the server then wants.
    let lists = Arc::new(AtomicUsize::new(0));
    let server = Fake::start(move |req| {
        let lists = lists.clone();
        async move {
            if req.is_post("tools/list") {
                let n = lists.fetch_add(1, Ordering::SeqCst);
                let declared = if n == 0 { "Region" } else { "Zone" };
                return result_of(&req.id(), json!({"tools": tools(declared)}));
            }
            strict(&req, "zone", "Zone")
        }
    })
    .await;
    let mut conn = modern(&server.url).await;
    send(&conn, request(1, "tools/list")).await.unwrap();
    recv_response(&mut conn).await;
    send(&conn, weather(2, json!({"region": "eu"})))
        .await
        .unwrap();
    let response = recv_response(&mut conn).await;
    assert!(!response.is_error(), "{response:?}");
    let calls: Vec<Req> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_post("tools/call"))
        .collect();
    assert_eq!(calls[0].header("mcp-param-region"), Some("eu"));
    assert_eq!(calls[1].header("mcp-param-zone"), Some("eu"));
    assert_eq!(calls[1].header("mcp-param-region"), None);
}

/// The tools of the server test: `echo` mirrors `region`.
fn echo_tools() -> Value {
    json!({"tools": [{"name": "echo", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "text": {"type": "string"},
    }}}]})
}

/// Answers `tools/list` with [`echo_tools`] and `tools/call` with its arguments.
async fn echo_app(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    while let Ok(Some(Message::Request(request))) = conn.recv().await {
        let params: Value = request.parse_params().unwrap_or(Value::Null);
        let result = match request.method.as_str() {
            "tools/list" => echo_tools(),
            _ => json!({"arguments": params["arguments"]}),
        };
        let response = Response::success(request.id, to_raw_value(&result).unwrap());
        if sender.send(Message::from(response).into()).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn m8_our_server_checking_the_headers_is_called_after_a_relist() {
    let declared = ToolHeaders::from_tools_list(&echo_tools()).unwrap();
    let service = StreamableHttpService::new(Config::default().tool_headers(declared), echo_app);
    let wire = Wire::Http1;
    let addr = crate::our_server::serve(service, wire).await;
    let mut conn = connect(wire.builder(&wire.url(addr)).family(Family::PerRequest)).await;
    // Not listed yet: sent without the header, refused, listed, sent again with it.
    let arguments = json!({"region": " zone été ", "text": "hi"});
    let call = Request::new(
        1,
        "tools/call",
        Some(to_raw_value(&json!({"name": "echo", "arguments": arguments})).unwrap()),
    );
    send(&conn, call.into()).await.unwrap();
    let response = recv_response(&mut conn).await;
    let result: Value = serde_json::from_str(response.result().unwrap().get()).unwrap();
    assert_eq!(result["arguments"], arguments);
    conn.close().await.unwrap();
}
