//! M1-M6: the per-request family of 2026-07-28, beside the session-based one.

use std::time::Duration;

use http::StatusCode;
use mcp_jsonrpc::Id;
use mcp_streamable_server::{Config, Families, InMemoryEventStore, codes};
use serde_json::{Value, json};

use crate::harness::*;
use crate::modern_app::*;

#[tokio::test]
async fn m1_each_post_is_classified_and_both_families_share_the_endpoint() {
    let (service, _log) = logged(Config::default());
    // A session-based client.
    let init = service
        .handle(request(post(None), initialize_body(0, "2025-11-25")))
        .await;
    assert_eq!(init.status(), StatusCode::OK);
    let session = session_id(init.headers()).expect("legacy initialize starts a session");
    drop(init);
    // A modern request beside it: no session, served at once, in its version.
    let response = service.handle(call_request(1, "echo", json!({}))).await;
    assert!(response.headers().get("mcp-session-id").is_none());
    let result = json_result(response).await;
    assert_eq!(
        result,
        json!({"name": "echo", "version": V, "session": null})
    );
    // `_meta` alone makes a request modern; the header then has to agree (M3).
    let no_header = request(
        post(None)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo"),
        body(2, "tools/call", json!({"name": "echo"})),
    );
    let (code, id, _) = refusal(service.handle(no_header).await, StatusCode::BAD_REQUEST).await;
    assert_eq!((code, id), (codes::HEADER_MISMATCH, Some(Id::from(2))));
    // The header alone does too; then `_meta` has to be there.
    let no_meta = request(
        modern("tools/list"),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string(),
    );
    let (code, id, message) = refusal(service.handle(no_meta).await, StatusCode::BAD_REQUEST).await;
    assert_eq!(
        (code, id),
        (mcp_jsonrpc::code::INVALID_PARAMS, Some(Id::from(3)))
    );
    assert!(
        message.contains("io.modelcontextprotocol/protocolVersion"),
        "{message}"
    );
    // A modern initialize does not exist.
    let init = request(
        modern("initialize"),
        body(
            4,
            "initialize",
            json!({"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        ),
    );
    let (code, id, _) = refusal(service.handle(init).await, StatusCode::NOT_FOUND).await;
    assert_eq!(
        (code, id),
        (mcp_jsonrpc::code::METHOD_NOT_FOUND, Some(Id::from(4)))
    );
    // The session is still there and works.
    assert_eq!(service.session_count(), 1);
    let ping = service
        .handle(request(
            with(post(Some(&session)), "mcp-protocol-version", "2025-11-25"),
            ping(5),
        ))
        .await;
    assert_eq!(ping.status(), StatusCode::OK);
}

#[tokio::test]
async fn m2_no_sessions_no_get_no_batches_and_notifications_get_202() {
    let (service, mut log) = logged(Config::default().event_store(InMemoryEventStore::default()));
    // A session id is neither read nor minted; Last-Event-ID means nothing.
    let response = service
        .handle(request(
            modern("tools/call")
                .header("mcp-name", "echo")
                .header("mcp-session-id", "no-such-session")
                .header("last-event-id", "1_5"),
            body(1, "tools/call", json!({"name": "echo"})),
        ))
        .await;
    assert!(response.headers().get("mcp-session-id").is_none());
    assert_eq!(json_result(response).await["session"], Value::Null);
    assert_eq!(service.session_count(), 0);
    // GET and DELETE naming a modern version: 405, only POST allowed.
    for method in [http::Method::GET, http::Method::DELETE] {
        let req = http::Request::builder()
            .method(method.clone())
            .uri("http://localhost/mcp")
            .header("host", "localhost")
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", V)
            .body(http_body_util::Full::<bytes::Bytes>::default())
            .unwrap();
        let response = service.handle(req).await;
        assert_eq!(response.headers()["allow"], "POST", "{method}");
        refusal(response, StatusCode::METHOD_NOT_ALLOWED).await;
    }
    // One message per POST, and never a response.
    let batch = format!(
        "[{},{}]",
        body(2, "tools/list", json!({})),
        body(3, "tools/list", json!({}))
    );
    let (code, _, _) = refusal(
        service.handle(request(modern("tools/list"), batch)).await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert_eq!(code, mcp_jsonrpc::code::INVALID_REQUEST);
    let answer = json!({"jsonrpc": "2.0", "id": 9, "result": {}}).to_string();
    let (code, _, _) = refusal(
        service.handle(request(modern("x"), answer)).await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert_eq!(code, mcp_jsonrpc::code::INVALID_REQUEST);
    // A notification: 202, and the application gets it on a connection that then ends.
    log_until(&mut log, "end").await;
    let mut params = json!({});
    params["_meta"] = meta();
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": params})
            .to_string();
    let response = service
        .handle(request(modern("notifications/roots/list_changed"), note))
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert_eq!(
        log_until(&mut log, "end").await,
        ["n:notifications/roots/list_changed", "end"]
    );
}

/// M3's checks in order: each case breaks one rule, and every rule after it, so the answer
/// shows which is checked first.
#[tokio::test]
async fn m3_meta_then_version_header_then_support_each_400_with_the_id() {
    let (service, _log) = logged(Config::default());
    let meta_without = |key: &str| {
        let mut m = meta();
        m.as_object_mut().unwrap().remove(key);
        m
    };
    let with_meta = |version_header: Option<&str>, meta: Value| {
        let mut b = post(None).header("mcp-method", "tools/list");
        if let Some(v) = version_header {
            b = b.header("mcp-protocol-version", v);
        }
        let body =
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}})
                .to_string();
        request(b, body)
    };
    let mut versioned = meta();
    versioned["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let mut legacy_in_meta = meta();
    legacy_in_meta["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let cases: Vec<(&str, http::Request<_>, i64)> = vec![
        ("no capabilities, header differs, unsupported", with_meta(Some("2099-01-01"), meta_without("io.modelcontextprotocol/clientCapabilities")), mcp_jsonrpc::code::INVALID_PARAMS),
        ("no version in _meta", with_meta(Some(V), meta_without("io.modelcontextprotocol/protocolVersion")), mcp_jsonrpc::code::INVALID_PARAMS),
        ("header differs, unsupported", with_meta(Some("2098-01-01"), versioned.clone()), codes::HEADER_MISMATCH),
        ("header missing", with_meta(None, meta()), codes::HEADER_MISMATCH),
        ("header differs in case of a legacy version", with_meta(Some("2025-11-25"), meta()), codes::HEADER_MISMATCH),
        ("unsupported, Mcp-Method wrong too", request(post(None).header("mcp-protocol-version", "2099-01-01").header("mcp-method", "nope"), json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": versioned}}).to_string()), codes::UNSUPPORTED_PROTOCOL_VERSION),
        ("a legacy version in _meta", with_meta(Some("2025-11-25"), legacy_in_meta), codes::UNSUPPORTED_PROTOCOL_VERSION),
    ];
    for (case, req, want) in cases {
        let response = service.handle(req).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{case}");
        let bytes = body_bytes(response).await;
        let reply: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(reply["id"], 7, "{case}: {reply}");
        assert_eq!(reply["error"]["code"], want, "{case}: {reply}");
        if want == codes::UNSUPPORTED_PROTOCOL_VERSION {
            let data = &reply["error"]["data"];
            assert_eq!(
                data["supported"],
                json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]),
                "{case}"
            );
            assert!(
                data["requested"] == "2099-01-01" || data["requested"] == "2025-11-25",
                "{case}: {data}"
            );
        }
    }
}

/// M4: the mirrored headers against the body. `(method header, name header, method, name
/// field, name, accepted)`.
#[tokio::test]
async fn m4_fixture_table_of_mirrored_headers() {
    let (service, _log) = logged(Config::default());
    type Case = (
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
        &'static str,
        Option<(&'static str, &'static str)>,
        bool,
    );
    let cases: &[Case] = &[
        (
            "plain",
            Some("tools/call"),
            Some("echo"),
            "tools/call",
            Some(("name", "echo")),
            true,
        ),
        (
            "name header in capitals",
            Some("tools/call"),
            Some("echo"),
            "tools/call",
            Some(("name", "echo")),
            true,
        ),
        (
            "whitespace around values",
            Some("  tools/call "),
            Some("\techo  "),
            "tools/call",
            Some(("name", "echo")),
            true,
        ),
        (
            "base64 name, padded",
            Some("tools/call"),
            Some("=?base64?5aSp5rCX?="),
            "tools/call",
            Some(("name", "天気")),
            true,
        ),
        (
            "base64 of leading and trailing spaces",
            Some("tools/call"),
            Some("=?base64?IHBhZGRlZCA=?="),
            "tools/call",
            Some(("name", " padded ")),
            true,
        ),
        (
            "base64 of a literal sentinel",
            Some("tools/call"),
            Some("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
            "tools/call",
            Some(("name", "=?base64?literal?=")),
            true,
        ),
        (
            "base64 method",
            Some("=?base64?dG9vbHMvY2FsbA==?="),
            Some("echo"),
            "tools/call",
            Some(("name", "echo")),
            true,
        ),
        (
            "resources/read mirrors the uri",
            Some("resources/read"),
            Some("file:///a%20b.txt"),
            "resources/read",
            Some(("uri", "file:///a%20b.txt")),
            true,
        ),
        (
            "prompts/get mirrors the name",
            Some("prompts/get"),
            Some("greet"),
            "prompts/get",
            Some(("name", "greet")),
            true,
        ),
        (
            "other methods need no name",
            Some("tools/list"),
            None,
            "tools/list",
            None,
            true,
        ),
        (
            "a name on other methods is ignored",
            Some("tools/list"),
            Some("whatever"),
            "tools/list",
            None,
            true,
        ),
        (
            "method missing",
            None,
            Some("echo"),
            "tools/call",
            Some(("name", "echo")),
            false,
        ),
        (
            "method differs",
            Some("prompts/list"),
            None,
            "tools/list",
            None,
            false,
        ),
        (
            "method differs in case",
            Some("TOOLS/LIST"),
            None,
            "tools/list",
            None,
            false,
        ),
        (
            "name missing",
            Some("tools/call"),
            None,
            "tools/call",
            Some(("name", "echo")),
            false,
        ),
        (
            "name differs",
            Some("tools/call"),
            Some("wrong_tool_name"),
            "tools/call",
            Some(("name", "echo")),
            false,
        ),
        (
            "name differs in case",
            Some("tools/call"),
            Some("ECHO"),
            "tools/call",
            Some(("name", "echo")),
            false,
        ),
        (
            "uri differs",
            Some("resources/read"),
            Some("file:///b"),
            "resources/read",
            Some(("uri", "file:///a")),
            false,
        ),
        (
            "name for a body without one",
            Some("tools/call"),
            Some("echo"),
            "tools/call",
            None,
            false,
        ),
        (
            "bad base64",
            Some("tools/call"),
            Some("=?base64?5aSp5rC*?="),
            "tools/call",
            Some(("name", "天気")),
            false,
        ),
        (
            "base64 without its padding",
            Some("tools/call"),
            Some("=?base64?IHBhZGRlZCA?="),
            "tools/call",
            Some(("name", " padded ")),
            false,
        ),
        (
            "base64 of bytes that are not UTF-8",
            Some("tools/call"),
            Some("=?base64?/w==?="),
            "tools/call",
            Some(("name", "echo")),
            false,
        ),
        (
            "the sentinel not decoded",
            Some("tools/call"),
            Some("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
            "tools/call",
            Some(("name", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=")),
            false,
        ),
    ];
    for (i, (case, method_header, name_header, method, field, accepted)) in cases.iter().enumerate()
    {
        let mut b = post(None).header("mcp-protocol-version", V);
        if let Some(m) = method_header {
            b = if case.contains("capitals") {
                b.header("MCP-METHOD", *m)
            } else {
                b.header("mcp-method", *m)
            };
        }
        if let Some(n) = name_header {
            b = if case.contains("capitals") {
                b.header("MCP-NAME", *n)
            } else {
                b.header("Mcp-Name", *n)
            };
        }
        let mut params = json!({});
        if let Some((key, value)) = field {
            params[*key] = json!(value);
        }
        let id = 100 + i as i64;
        let response = service.handle(request(b, body(id, method, params))).await;
        let status = response.status();
        let reply: Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
        assert_eq!(reply["id"], id, "{case}: {reply}");
        let code = reply["error"]["code"].as_i64();
        if *accepted {
            // Past the transport: the application answered (the test app serves only
            // `tools/call`, and answers -32601, 404, for the rest).
            assert_ne!(code, Some(codes::HEADER_MISMATCH), "{case}: {reply}");
            assert!(
                status == StatusCode::OK || status == StatusCode::NOT_FOUND,
                "{case}: {status} {reply}"
            );
        } else {
            assert_eq!(
                (status, code),
                (StatusCode::BAD_REQUEST, Some(codes::HEADER_MISMATCH)),
                "{case}: {reply}"
            );
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("Mcp-Method")
                    || message.contains("Mcp-Name")
                    || message.contains("mcp-"),
                "{case}: {message}"
            );
        }
    }
}

#[tokio::test]
async fn m5_error_answers_get_their_status_before_the_reply_commits() {
    let (service, _log) = logged(Config::default());
    let cases = [
        (mcp_jsonrpc::code::METHOD_NOT_FOUND, StatusCode::NOT_FOUND),
        (mcp_jsonrpc::code::INVALID_PARAMS, StatusCode::BAD_REQUEST),
        (mcp_jsonrpc::code::INVALID_REQUEST, StatusCode::BAD_REQUEST),
        (mcp_jsonrpc::code::PARSE_ERROR, StatusCode::BAD_REQUEST),
        (codes::HEADER_MISMATCH, StatusCode::BAD_REQUEST),
        (
            codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
            StatusCode::BAD_REQUEST,
        ),
        (codes::UNSUPPORTED_PROTOCOL_VERSION, StatusCode::BAD_REQUEST),
        (mcp_jsonrpc::code::INTERNAL_ERROR, StatusCode::OK),
        (-32002, StatusCode::OK),
    ];
    for (i, (code, status)) in cases.into_iter().enumerate() {
        let id = i as i64;
        let (got, reply_id, _) = refusal(
            service
                .handle(call_request(id, "fail", json!({"code": code})))
                .await,
            status,
        )
        .await;
        assert_eq!((got, reply_id), (code, Some(Id::from(id))));
    }
    // An unknown method, answered by the application: 404 with its id.
    let unknown = request(
        modern("tasks/frobnicate"),
        body(50, "tasks/frobnicate", json!({})),
    );
    let (code, id, _) = refusal(service.handle(unknown).await, StatusCode::NOT_FOUND).await;
    assert_eq!(
        (code, id),
        (mcp_jsonrpc::code::METHOD_NOT_FOUND, Some(Id::from(50)))
    );
    // A notification first commits the reply to SSE: the error follows in the stream.
    let response = service
        .handle(call_request(51, "progress", json!({"then_fail": -32601})))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let labels: Vec<String> = messages(&sse_events(response, 10).await)
        .iter()
        .map(label)
        .collect();
    assert_eq!(labels, ["p1", "p2", "r51"]);
}

#[tokio::test(start_paused = true)]
async fn m5_a_silent_request_commits_to_sse_after_one_keep_alive_period() {
    let (service, _log) = logged(Config::default().keep_alive(Some(Duration::from_secs(15))));
    let started = tokio::time::Instant::now();
    let response = service
        .handle(call_request(1, "wait", json!({"sleep_ms": 20_000})))
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(15));
    assert_eq!(response.status(), StatusCode::OK);
    let mut sse = Sse::new(response);
    let events = sse.rest(10).await;
    let labels: Vec<String> = messages(&events).iter().map(label).collect();
    assert_eq!(labels, ["p2", "r1"]);
}

#[tokio::test]
async fn m6_the_stream_carries_that_request_only_without_event_ids() {
    let (service, _log) = logged(Config::default().event_store(InMemoryEventStore::default()));
    let response = service.handle(call_request(1, "progress", json!({}))).await;
    let mut sse = Sse::new(response);
    let labels: Vec<String> = messages(&sse.rest(10).await).iter().map(label).collect();
    assert_eq!(labels, ["p1", "p2", "r1"]);
    let raw = sse.raw_text();
    assert!(!raw.contains("id:") && !raw.contains("retry:"), "{raw}");
    // Requests to the client and unrelated messages fail at once, saying why.
    let response = service.handle(call_request(2, "ask", json!({}))).await;
    let result = json_result(response).await;
    assert!(
        result["ask"]
            .as_str()
            .unwrap()
            .contains("InputRequiredResult"),
        "{result}"
    );
    assert!(
        result["unrelated"]
            .as_str()
            .unwrap()
            .contains("must relate"),
        "{result}"
    );
}

#[tokio::test]
async fn m6_closing_the_stream_cancels_the_request_and_nothing_more_is_sent() {
    let (service, mut log) = logged(Config::default());
    let response = service
        .handle(call_request(
            7,
            "wait",
            json!({"notify": true, "sleep_ms": 200}),
        ))
        .await;
    let mut sse = Sse::new(response);
    let first = sse.next().await.expect("a notification");
    assert_eq!(label(&message(&first)), "p1");
    drop(sse);
    let seen = log_until(&mut log, "send failed").await;
    assert_eq!(seen[0], "q:tools/call");
    assert_eq!(seen[1], "n:notifications/cancelled");
    let cancelled: Value =
        serde_json::from_str(seen[2].strip_prefix("cancelled ").unwrap()).unwrap();
    assert_eq!(cancelled["requestId"], 7);
    assert_eq!(seen[3..], ["end", "send failed"]);
}

#[tokio::test]
async fn m6_a_client_gone_before_the_reply_cancels_too() {
    let (service, mut log) = logged(Config::default());
    let pending = service.handle(call_request(8, "wait", json!({"sleep_ms": 200})));
    // The POST waits for the application's first message; the client leaves meanwhile.
    let left = tokio::time::timeout(Duration::from_millis(50), pending).await;
    assert!(
        left.is_err(),
        "no reply before the application said anything"
    );
    let seen = log_until(&mut log, "send failed").await;
    assert_eq!(seen[..2], ["q:tools/call", "n:notifications/cancelled"]);
    assert_eq!(seen[3..], ["end", "send failed"]);
}

#[tokio::test]
async fn eras_can_be_refused() {
    let (modern_only, _log) = logged(Config::default().families(Families::PerRequestOnly));
    let init = modern_only
        .handle(request(post(None), initialize_body(1, "2025-06-18")))
        .await;
    let bytes = body_bytes(init).await;
    let reply: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(reply["error"]["code"], codes::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(
        reply["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-06-18"})
    );
    assert_eq!(reply["id"], 1);
    let get = modern_only.handle(get("anything", None)).await;
    assert_eq!(get.headers()["allow"], "POST");
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        json_result(modern_only.handle(call_request(2, "echo", json!({}))).await).await["version"],
        V
    );

    // A legacy-only server answers a modern request as a 2025-11-25 server does: a 400 that is
    // not a modern error, which sends dual-era clients to initialize.
    let (legacy_only, _log) = logged(Config::default().families(Families::SessionOnly));
    let (code, _, _) = refusal(
        legacy_only.handle(call_request(3, "echo", json!({}))).await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert_eq!(code, codes::TRANSPORT_ERROR);
}

/// Both families at once on one service, from many tasks: each gets its own answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn m1_both_families_concurrently() {
    let (service, _log) = logged(Config::default().event_store(InMemoryEventStore::default()));
    let mut tasks = Vec::new();
    for client in 0..16i64 {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            if client % 2 == 0 {
                for i in 0..10 {
                    let id = client * 100 + i;
                    let response = service
                        .handle(call_request(id, "progress", json!({})))
                        .await;
                    let labels: Vec<String> = messages(&sse_events(response, 10).await)
                        .iter()
                        .map(label)
                        .collect();
                    assert_eq!(labels, ["p1", "p2", format!("r{id}").as_str()]);
                }
            } else {
                let init = service
                    .handle(request(post(None), initialize_body(0, "2025-11-25")))
                    .await;
                let session = session_id(init.headers()).unwrap();
                drop(init);
                for i in 0..10 {
                    let id = client * 100 + i;
                    let b = with(post(Some(&session)), "mcp-protocol-version", "2025-11-25");
                    let response = service
                        .handle(request(b, crate::harness::call(id, "progress", json!({}))))
                        .await;
                    let labels: Vec<String> = messages(&sse_events(response, 10).await)
                        .iter()
                        .map(label)
                        .collect();
                    assert_eq!(labels, ["p1", "p2", format!("r{id}").as_str()]);
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(WAIT, task)
            .await
            .expect("in time")
            .expect("no panic");
    }
    assert_eq!(service.session_count(), 8);
}
