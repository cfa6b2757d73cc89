//! `echo_server`'s application: logging per session, and the server named in every
//! 2026-07-28 result.

use mcp_streamable_http::http;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_streamable_http::jsonrpc::{Body, Message, code};
use mcp_streamable_http::server::{Config, ResponseBody, StreamableHttpService};
use serde_json::{Value, json};

use support::echo_app::{self, LEVELS, SERVER_INFO_META};

/// How long a response may take before the test gives up on it: a bound on a hang, far
/// above what any answer here needs, not a measure.
const PATIENCE: Duration = Duration::from_secs(10);

const MODERN: &str = "2026-07-28";

fn service() -> StreamableHttpService {
    StreamableHttpService::new(Config::default(), echo_app::session)
}

fn post(session: Option<&str>) -> http::request::Builder {
    let builder = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    match session {
        Some(id) => builder.header("mcp-session-id", id),
        None => builder,
    }
}

fn request(builder: http::request::Builder, body: Value) -> http::Request<Full<Bytes>> {
    builder
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The messages of a response, JSON or SSE, read to its end.
async fn messages(response: http::Response<ResponseBody>) -> Vec<Message> {
    let json = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let bytes = tokio::time::timeout(PATIENCE, response.into_body().collect())
        .await
        .expect("the response ends")
        .unwrap()
        .to_bytes();
    if json {
        return match mcp_streamable_http::jsonrpc::parse(&bytes).unwrap() {
            Body::Single(message) => vec![message],
            Body::Batch(batch) => batch,
        };
    }
    let mut scanner = mcp_streamable_http::sse::Scanner::new();
    scanner.feed(&bytes);
    let mut out = Vec::new();
    while let Some(event) = scanner.next_event().unwrap() {
        if let Ok(Body::Single(message)) =
            mcp_streamable_http::jsonrpc::parse(event.data.as_bytes())
        {
            out.push(message);
        }
    }
    out
}

/// The result of the only response among `messages`, or its error's code.
fn outcome(messages: &[Message]) -> Result<Value, i64> {
    let responses: Vec<_> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Response(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(responses.len(), 1, "{messages:?}");
    match responses[0].result() {
        Ok(raw) => Ok(serde_json::from_str(raw.get()).unwrap()),
        Err(error) => Err(error.code),
    }
}

/// The text of a tool result.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// A session with `initialize` and `notifications/initialized` done; its id and the
/// `initialize` result.
async fn open_session(service: &StreamableHttpService) -> (String, Value) {
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let response = service.handle(request(post(None), init)).await;
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let result = outcome(&messages(response).await).unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = service
        .handle(request(post(Some(&session)), initialized))
        .await;
    assert_eq!(accepted.status(), 202);
    (session, result)
}

async fn call(
    service: &StreamableHttpService,
    session: &str,
    id: i64,
    method: &str,
    params: Value,
) -> Result<Value, i64> {
    let response = service
        .handle(request(post(Some(session)), rpc(id, method, params)))
        .await;
    outcome(&messages(response).await)
}

/// The next `notifications/message` on a standalone stream.
async fn next_log(
    body: &mut ResponseBody,
    scanner: &mut mcp_streamable_http::sse::Scanner,
) -> Value {
    loop {
        while let Some(event) = scanner.next_event().unwrap() {
            if let Ok(Body::Single(Message::Notification(n))) =
                mcp_streamable_http::jsonrpc::parse(event.data.as_bytes())
                && n.method == "notifications/message"
            {
                return n.parse_params().unwrap();
            }
        }
        let frame = tokio::time::timeout(PATIENCE, body.frame())
            .await
            .expect("a log message arrives")
            .expect("the stream stays open")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            scanner.feed(&data);
        }
    }
}

#[tokio::test]
async fn logging_set_level_filters_the_sessions_log_messages() {
    let service = service();
    let (session, init) = open_session(&service).await;
    assert_eq!(init["capabilities"]["logging"], json!({}), "{init}");

    let get = http::Request::get("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let standalone = service.handle(get).await;
    assert_eq!(standalone.status(), 200);
    let mut stream = standalone.into_body();
    let mut scanner = mcp_streamable_http::sse::Scanner::new();

    let broadcast = |id: i64, level: &str, words: &str| {
        let args = json!({"name": "broadcast", "arguments": {"text": words, "level": level}});
        let (service, session) = (&service, &session);
        async move { call(service, session, id, "tools/call", args).await }
    };
    // Before any setLevel, every level goes out.
    assert_eq!(text(&broadcast(2, "debug", "first").await.unwrap()), "sent");
    let log = next_log(&mut stream, &mut scanner).await;
    assert_eq!(
        (log["level"].as_str(), log["data"].as_str()),
        (Some("debug"), Some("first"))
    );

    let set = call(
        &service,
        &session,
        3,
        "logging/setLevel",
        json!({"level": "warning"}),
    )
    .await;
    assert_eq!(set, Ok(json!({})));
    for (id, level) in [(4, "debug"), (5, "info"), (6, "notice")] {
        assert_eq!(
            text(&broadcast(id, level, "below").await.unwrap()),
            "filtered",
            "{level}"
        );
    }
    assert_eq!(text(&broadcast(7, "error", "above").await.unwrap()), "sent");
    // The next message on the stream is the one above the level: none of those below were sent.
    let log = next_log(&mut stream, &mut scanner).await;
    assert_eq!(
        (log["level"].as_str(), log["data"].as_str()),
        (Some("error"), Some("above"))
    );

    for (id, level) in [(8, json!("loud")), (9, json!(3)), (10, Value::Null)] {
        let refused = call(
            &service,
            &session,
            id,
            "logging/setLevel",
            json!({"level": level}),
        )
        .await;
        assert_eq!(refused, Err(code::INVALID_PARAMS), "{level}");
    }
    // Every level of RFC 5424 is accepted, the last one set wins.
    for (id, level) in (11..).zip(LEVELS) {
        let set = call(
            &service,
            &session,
            id,
            "logging/setLevel",
            json!({"level": level}),
        )
        .await;
        assert_eq!(set, Ok(json!({})), "{level}");
    }
    assert_eq!(
        text(&broadcast(30, "alert", "below").await.unwrap()),
        "filtered"
    );
}

#[tokio::test]
async fn the_level_belongs_to_its_session() {
    let service = service();
    let (quiet, _) = open_session(&service).await;
    let (chatty, _) = open_session(&service).await;
    let set = call(
        &service,
        &quiet,
        2,
        "logging/setLevel",
        json!({"level": "emergency"}),
    )
    .await;
    assert_eq!(set, Ok(json!({})));
    let args = json!({"name": "broadcast", "arguments": {"text": "x", "level": "info"}});
    let quiet_answer = call(&service, &quiet, 3, "tools/call", args.clone())
        .await
        .unwrap();
    let chatty_answer = call(&service, &chatty, 3, "tools/call", args)
        .await
        .unwrap();
    assert_eq!(
        (text(&quiet_answer), text(&chatty_answer)),
        ("filtered", "sent")
    );
}

fn modern(
    id: i64,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> http::Request<Full<Bytes>> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut builder = post(None)
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method);
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    request(builder, rpc(id, method, params))
}

#[tokio::test]
async fn every_2026_07_28_result_names_the_server_in_its_meta() {
    let service = service();
    let requests = [
        modern(1, "server/discover", None, json!({})),
        modern(2, "tools/list", None, json!({})),
        modern(
            3,
            "tools/call",
            Some("echo"),
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ),
    ];
    for request in requests {
        let method = request.headers()["mcp-method"].to_str().unwrap().to_owned();
        let result = outcome(&messages(service.handle(request).await).await).unwrap();
        assert_eq!(result["resultType"], "complete", "{method}: {result}");
        let server = &result["_meta"][SERVER_INFO_META];
        assert_eq!(server["name"], "echo_server", "{method}: {result}");
        assert_eq!(
            server["version"],
            env!("CARGO_PKG_VERSION"),
            "{method}: {result}"
        );
    }
    // The session family keeps its own shape: the server is named by `initialize` alone.
    let (session, init) = open_session(&service).await;
    assert_eq!(init["serverInfo"]["name"], "echo_server");
    let listed = call(&service, &session, 2, "tools/list", json!({}))
        .await
        .unwrap();
    assert!(listed.get("_meta").is_none(), "{listed}");
}

#[tokio::test]
async fn logging_set_level_is_not_part_of_2026_07_28() {
    let service = service();
    let refused = modern(1, "logging/setLevel", None, json!({"level": "info"}));
    let answer = outcome(&messages(service.handle(refused).await).await);
    assert_eq!(answer, Err(code::METHOD_NOT_FOUND));
}
