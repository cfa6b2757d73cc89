//! M7: the 2026-07-28 per-request protocol: `_meta` and the mirrored headers, requests the
//! application shaped itself, refusals delivered as responses, the family setting and its
//! discovery, cancelling by closing, and re-sending after a broken stream.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Response as HttpResponse};
use mcp_jsonrpc::{Id, Message, Notification, Request, Response, to_raw_value};
use mcp_streamable_client::{Family, LOST_RESPONSE_CODE, ReconnectPolicy};
use mcp_transport::{Connection, ErrorKind, Transport};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::fake::{self, Body, Fake, Req, SESSION, VERSION};
use crate::*;

/// The per-request protocol version.
const MODERN: &str = "2026-07-28";
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Whether the fake received `req` the per-request way.
fn is_modern(req: &Req) -> bool {
    req.header("mcp-method").is_some()
}

/// A 2026-07-28 server: requests get a JSON echo of their method and params, notifications 202,
/// GET and DELETE 405.
fn modern_standard(req: &Req) -> HttpResponse<Body> {
    if req.method != Method::POST {
        return fake::status(405, "method not allowed");
    }
    match (req.rpc(), req.id()) {
        (Some(_), Value::Null) => fake::accepted(),
        (Some(method), id) => fake::json_reply(json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {"method": method, "params": req.json()["params"]},
        })),
        (None, _) => fake::status(400, "not json-rpc"),
    }
}

/// An answer carrying a JSON-RPC error response.
fn refusal(
    status: u16,
    id: &Value,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> HttpResponse<Body> {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    fake::answer(status, "application/json", body.to_string())
}

/// A session-based server answering a POST without a session id the way the TypeScript SDK
/// does: 400 with a JSON-RPC error of code -32000. Otherwise [`fake::standard`].
fn legacy(req: &Req) -> HttpResponse<Body> {
    if req.method == Method::POST
        && !req.is_post("initialize")
        && req.header("mcp-session-id").is_none()
    {
        return refusal(
            400,
            &Value::Null,
            -32000,
            "Bad Request: missing session id",
            None,
        );
    }
    fake::standard(req)
}

fn call(id: i64, method: &str, params: Value) -> Message {
    Request::new(id, method, Some(to_raw_value(&params).unwrap())).into()
}

fn tool_call(id: i64, name: &str) -> Message {
    call(
        id,
        "tools/call",
        json!({"name": name, "arguments": {"city": "Paris"}}),
    )
}

fn progress() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}})
        .to_string()
}

/// The POSTs of `rpc` in `log`.
fn posts<'a>(log: &'a [Req], rpc: &str) -> Vec<&'a Req> {
    log.iter().filter(|r| r.is_post(rpc)).collect()
}

#[tokio::test]
async fn m7_requests_carry_the_meta_and_the_mirrored_headers() {
    let server = Fake::start(|req| async move { modern_standard(&req) }).await;
    let client = builder(&server.url)
        .family(Family::PerRequest)
        .client_info("it-client", "4.2")
        .client_capabilities(json!({"sampling": {}}))
        .build()
        .unwrap();
    let mut conn = client.clone().connect().await.unwrap();

    send(&conn, tool_call(1, "get_weather")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(1)));
    send(&conn, request(2, "tools/list")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(2)));
    let read = call(3, "resources/read", json!({"uri": "file:///a/config.json"}));
    send(&conn, read).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(3)));
    let note = Notification::new("notifications/roots/list_changed", None);
    send(&conn, note.into()).await.unwrap();

    let log = server.requests();
    assert_eq!(log.len(), 4, "{log:#?}");
    for req in &log {
        assert_eq!(req.method, Method::POST);
        assert_eq!(
            req.header("Accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(req.header("content-type"), Some("application/json"));
        // Header names in any case: the same header.
        assert_eq!(req.header("MCP-Protocol-Version"), Some(MODERN));
        assert_eq!(req.header("mcp-method"), req.rpc().as_deref());
        assert_eq!(req.header("mcp-session-id"), None);
    }
    assert_eq!(log[0].header("Mcp-Name"), Some("get_weather"));
    assert_eq!(log[1].header("mcp-name"), None);
    assert_eq!(log[2].header("mcp-name"), Some("file:///a/config.json"));
    assert_eq!(log[3].header("mcp-name"), None);
    assert_eq!(
        log[3].header("mcp-method"),
        Some("notifications/roots/list_changed")
    );

    let meta = json!({
        PROTOCOL_VERSION: MODERN,
        CLIENT_INFO: {"name": "it-client", "version": "4.2"},
        CLIENT_CAPABILITIES: {"sampling": {}},
    });
    let params = &log[0].json()["params"];
    assert_eq!(params["_meta"], meta);
    assert_eq!(params["name"], "get_weather");
    assert_eq!(params["arguments"], json!({"city": "Paris"}));
    assert_eq!(log[1].json()["params"], json!({"_meta": meta}));
    assert_eq!(log[2].json()["params"]["_meta"], meta);

    assert_eq!(client.family(), Some(Family::PerRequest));
    assert_eq!(conn.family(), Some(Family::PerRequest));
    assert_eq!(conn.session_id(), None);
}

#[tokio::test]
async fn m7_mcp_name_is_base64_unless_it_is_plain_visible_ascii() {
    let server = Fake::start(|req| async move { modern_standard(&req) }).await;
    let mut conn = connect(builder(&server.url).family(Family::PerRequest)).await;
    let names = [
        ("plain_name", "plain_name"),
        ("with inner spaces", "with inner spaces"),
        ("météo", "=?base64?bcOpdMOpbw==?="),
        (" lead", "=?base64?IGxlYWQ=?="),
        ("=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="),
    ];
    for (id, (name, _)) in (1..).zip(names) {
        send(&conn, tool_call(id, name)).await.unwrap();
        assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(id)));
    }
    send(&conn, call(9, "prompts/get", json!({"name": "a\tb"})))
        .await
        .unwrap();
    recv_response(&mut conn).await;

    let log = server.requests();
    assert_eq!(log.len(), names.len() + 1);
    for (req, (name, header)) in log.iter().zip(names) {
        assert_eq!(req.header("mcp-name"), Some(header), "{name:?}");
        // The body keeps the name as it is.
        assert_eq!(req.json()["params"]["name"], name);
    }
    assert_eq!(log[names.len()].header("mcp-name"), Some("=?base64?YQli?="));
}

#[tokio::test]
async fn m7_an_application_filled_meta_passes_through_unchanged() {
    let server = Fake::start(|req| async move {
        if req.is_post("prompts/get") {
            return refusal(404, &Value::Null, -32601, "Method not found", None);
        }
        modern_standard(&req)
    })
    .await;
    // Even pinned to the session-based protocol: the request says what it is.
    let client = builder(&server.url)
        .family(Family::Session)
        .build()
        .unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    let params = json!({
        "name": "echo",
        "_meta": {
            PROTOCOL_VERSION: "2027-01-01",
            CLIENT_INFO: {"name": "app", "version": "7"},
            "com.example/trace": "t-1",
        }
    });
    send(&conn, call(1, "tools/call", params.clone()))
        .await
        .unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(1)));
    assert!(!response.is_error());

    // A refusal with a JSON-RPC error body is the request's response, under its id.
    let mut other = params.clone();
    other["name"] = json!("greeting");
    send(&conn, call(2, "prompts/get", other)).await.unwrap();
    let refused = recv_response(&mut conn).await;
    assert_eq!(refused.id(), Some(&Id::from(2)));
    assert_eq!(refused.result().unwrap_err().code, -32601);

    let log = server.requests();
    assert_eq!(log.len(), 2, "{log:#?}");
    assert_eq!(log[0].header("mcp-protocol-version"), Some("2027-01-01"));
    assert_eq!(log[0].header("mcp-method"), Some("tools/call"));
    assert_eq!(log[0].header("mcp-name"), Some("echo"));
    assert_eq!(log[0].header("mcp-session-id"), None);
    // Nothing added, nothing overwritten.
    assert_eq!(log[0].json()["params"], params);
    assert_eq!(log[1].header("mcp-name"), Some("greeting"));
    assert_eq!(client.family(), Some(Family::Session));
}

#[tokio::test]
async fn m7_an_application_falling_back_itself_runs_the_session_lifecycle() {
    // What rmcp's own dual-family client does: a modern probe, then `initialize` when the refusal
    // is not a modern one.
    let server = Fake::start(|req| async move { legacy(&req) }).await;
    let client = builder(&server.url)
        .standalone_stream(false)
        .build()
        .unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    let meta = json!({"_meta": {
        PROTOCOL_VERSION: MODERN,
        CLIENT_INFO: {"name": "app", "version": "1"},
        CLIENT_CAPABILITIES: {},
    }});
    send(&conn, call(1, "server/discover", meta)).await.unwrap();
    let refused = recv_response(&mut conn).await;
    assert_eq!(refused.id(), Some(&Id::from(1)));
    assert_eq!(refused.result().unwrap_err().code, -32000);

    handshake(&mut conn).await;
    send(&conn, request(2, "tools/list")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(2)));

    let log = server.requests();
    let inits = posts(&log, "initialize");
    assert_eq!(inits.len(), 1, "only the application's: {log:#?}");
    assert_eq!(inits[0].id(), json!(1));
    assert_eq!(
        posts(&log, "tools/list")[0].header("mcp-session-id"),
        Some(SESSION)
    );
    assert_eq!(conn.family(), Some(Family::Session));
    // The application's own probe teaches the transport nothing.
    assert_eq!(client.family(), None);
}

#[tokio::test]
async fn m7_a_header_mismatch_is_delivered_as_the_requests_error_response() {
    let server = Fake::start(|req| async move {
        refusal(400, &req.id(), -32020, "Header mismatch: Mcp-Name", None)
    })
    .await;
    let client = builder(&server.url).build().unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    send(&conn, tool_call(1, "x")).await.unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(1)));
    let error = response.result().unwrap_err();
    assert_eq!(error.code, -32020);
    assert_eq!(error.message, "Header mismatch: Mcp-Name");
    // A modern refusal: no fall back. A -32020 of a `tools/call` is retried once after a
    // re-list (M8), whose own refusal the application never sees.
    let methods: Vec<_> = server.requests().iter().filter_map(Req::rpc).collect();
    assert_eq!(methods, ["tools/call", "tools/list", "tools/call"]);
    assert_eq!(client.family(), Some(Family::PerRequest));
}

#[tokio::test]
async fn m7_unsupported_version_listing_a_modern_one_is_retried() {
    let refused = Arc::new(AtomicUsize::new(0));
    let server = Fake::start({
        let refused = refused.clone();
        move |req| {
            let refused = refused.clone();
            async move {
                if refused.fetch_add(1, Ordering::SeqCst) == 0 {
                    let data = json!({"supported": ["2025-06-18", MODERN], "requested": MODERN});
                    return refusal(
                        400,
                        &req.id(),
                        -32022,
                        "Unsupported protocol version",
                        Some(data),
                    );
                }
                modern_standard(&req)
            }
        }
    })
    .await;
    let client = builder(&server.url).build().unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    send(&conn, request(1, "tools/list")).await.unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(1)));
    assert!(!response.is_error(), "{response:?}");
    assert_quiet(&mut conn, Duration::from_millis(100)).await;

    let log = server.requests();
    assert_eq!(log.len(), 2, "{log:#?}");
    for req in &log {
        assert!(req.is_post("tools/list"));
        assert_eq!(req.header("mcp-protocol-version"), Some(MODERN));
        assert_eq!(req.json()["params"]["_meta"][PROTOCOL_VERSION], MODERN);
    }
    assert_eq!(client.family(), Some(Family::PerRequest));
}

#[tokio::test]
async fn m7_unsupported_version_listing_only_legacy_ones_falls_back_to_initialize() {
    let server = Fake::start(|req| async move {
        if is_modern(&req) {
            let data = json!({"supported": ["2025-03-26", "2025-06-18"], "requested": MODERN});
            return refusal(
                400,
                &req.id(),
                -32022,
                "Unsupported protocol version",
                Some(data),
            );
        }
        fake::standard(&req)
    })
    .await;
    let client = builder(&server.url)
        .client_info("it", "1")
        .client_capabilities(json!({"roots": {}}))
        .build()
        .unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    send(&conn, request(5, "tools/list")).await.unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(5)));
    assert!(!response.is_error(), "{response:?}");
    // The initialize result was the transport's.
    assert_quiet(&mut conn, Duration::from_millis(100)).await;

    let log = server.requests();
    let seen: Vec<_> = log
        .iter()
        .filter(|r| r.method == Method::POST)
        .map(|r| (r.rpc().unwrap(), is_modern(r)))
        .collect();
    let s = |m: &str| m.to_owned();
    assert_eq!(
        seen,
        [
            (s("tools/list"), true),
            (s("initialize"), false),
            (s("notifications/initialized"), false),
            (s("tools/list"), false),
        ]
    );
    let init = posts(&log, "initialize")[0].json();
    assert_eq!(
        init["params"],
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": "it", "version": "1"}})
    );
    assert!(init["id"].is_string(), "{init}");
    let resent = posts(&log, "tools/list")[1];
    assert_eq!(resent.header("mcp-session-id"), Some(SESSION));
    assert_eq!(resent.header("mcp-protocol-version"), Some(VERSION));
    assert_eq!(resent.id(), json!(5));
    assert_eq!(conn.session_id().as_deref(), Some(SESSION));
    assert_eq!(conn.family(), Some(Family::Session));
    assert_eq!(client.family(), Some(Family::Session));
}

#[tokio::test]
async fn m7_auto_falls_back_on_a_legacy_400_and_remembers_the_era() {
    let server = Fake::start(|req| async move { legacy(&req) }).await;
    let client = builder(&server.url).build().unwrap();
    let mut first = client.clone().connect().await.unwrap();
    assert_eq!(client.family(), None);
    send(&first, request(1, "tools/list")).await.unwrap();
    let response = recv_response(&mut first).await;
    assert_eq!(response.id(), Some(&Id::from(1)));
    assert!(!response.is_error(), "{response:?}");
    assert_eq!(client.family(), Some(Family::Session));
    // The session runs as usual: its standalone stream opens.
    let log = server
        .wait_for(|log| log.iter().any(|r| r.method == Method::GET))
        .await;
    let get = log.iter().find(|r| r.method == Method::GET).unwrap();
    assert_eq!(get.header("mcp-session-id"), Some(SESSION));
    let init = posts(&log, "initialize")[0].json();
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        init["params"]["clientInfo"],
        json!({"name": "mcp-streamable-client", "version": env!("CARGO_PKG_VERSION")})
    );
    assert_eq!(init["params"]["capabilities"], json!({}));

    // A second connection from the same client goes straight to initialize.
    let mut second = client.clone().connect().await.unwrap();
    assert_eq!(second.family(), Some(Family::Session));
    send(&second, request(1, "tools/list")).await.unwrap();
    assert_eq!(recv_response(&mut second).await.id(), Some(&Id::from(1)));
    within(first.close()).await.unwrap();
    within(second.close()).await.unwrap();

    let log = server.requests();
    let probes = log.iter().filter(|r| is_modern(r)).count();
    assert_eq!(probes, 1, "{log:#?}");
    assert_eq!(posts(&log, "initialize").len(), 2);
    let sessions: Vec<_> = posts(&log, "tools/list")
        .iter()
        .map(|r| r.header("mcp-session-id"))
        .collect();
    assert_eq!(sessions, [None, Some(SESSION), Some(SESSION)]);
    assert_eq!(server.count(Method::DELETE), 2);
}

// On the test clock: the probe's 200 ms pass once every other task waits, with the other
// request among them.
#[tokio::test(start_paused = true)]
async fn m7_concurrent_first_requests_probe_once() {
    let server = Fake::start(|req| async move {
        if is_modern(&req) {
            // Long enough for the other request to arrive while the probe is out.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        legacy(&req)
    })
    .await;
    let client = builder(&server.url)
        .standalone_stream(false)
        .build()
        .unwrap();
    let mut a = client.clone().connect().await.unwrap();
    let mut b = client.clone().connect().await.unwrap();
    let (sent_a, sent_b) = tokio::join!(
        send(&a, request(1, "tools/list")),
        send(&b, request(1, "tools/list")),
    );
    sent_a.unwrap();
    sent_b.unwrap();
    assert_eq!(recv_response(&mut a).await.id(), Some(&Id::from(1)));
    assert_eq!(recv_response(&mut b).await.id(), Some(&Id::from(1)));
    let log = server.requests();
    assert_eq!(log.iter().filter(|r| is_modern(r)).count(), 1, "{log:#?}");
    assert_eq!(posts(&log, "initialize").len(), 2);
}

#[tokio::test]
async fn m7_the_modern_pin_never_falls_back() {
    let server = Fake::start(|req| async move {
        if req.is_post("ping") {
            return fake::status(405, "method not allowed");
        }
        legacy(&req)
    })
    .await;
    let client = builder(&server.url)
        .family(Family::PerRequest)
        .build()
        .unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    send(&conn, request(1, "tools/list")).await.unwrap();
    let refused = recv_response(&mut conn).await;
    assert_eq!(refused.id(), Some(&Id::from(1)));
    assert_eq!(refused.result().unwrap_err().code, -32000);
    // Without a JSON-RPC error to deliver, the send fails.
    let err = send(&conn, request(2, "ping")).await.unwrap_err();
    assert_eq!(cause(&err).status().map(|s| s.as_u16()), Some(405));

    settle(Duration::from_secs(1)).await;
    let log = server.requests();
    assert_eq!(log.len(), 2, "{log:#?}");
    assert!(log.iter().all(|r| r.method == Method::POST && is_modern(r)));
    assert_eq!(client.family(), Some(Family::PerRequest));
}

#[tokio::test]
async fn m7_the_legacy_pin_never_sends_modern() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let client = builder(&server.url)
        .family(Family::Session)
        .build()
        .unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    // Before any session, as today: a plain POST.
    send(&conn, request(7, "tools/list")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(7)));
    handshake(&mut conn).await;
    send(&conn, tool_call(2, "get_weather")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(2)));
    within(conn.close()).await.unwrap();

    let log = server.requests();
    assert!(log.len() >= 5, "{log:#?}");
    for req in &log {
        assert!(!is_modern(req), "{req:?}");
        assert!(req.header("mcp-name").is_none());
        assert!(req.json()["params"].get("_meta").is_none(), "{req:?}");
    }
    assert_eq!(log[0].header("mcp-protocol-version"), None);
    assert_eq!(conn.family(), Some(Family::Session));
}

#[tokio::test]
async fn m7_initialize_and_responses_under_the_modern_pin_are_refused() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let conn = connect(builder(&server.url).family(Family::PerRequest)).await;
    let err = send(&conn, initialize(1)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(cause(&err).is_unsupported());
    assert!(cause(&err).to_string().contains("initialize"), "{err}");
    let answer = Response::success(Id::from("server-ping"), to_raw_value(&json!({})).unwrap());
    let err = send(&conn, answer.into()).await.unwrap_err();
    assert!(cause(&err).is_unsupported(), "{err:?}");
    assert!(server.requests().is_empty());
    assert_eq!(conn.session_id(), None);
}

#[tokio::test]
async fn m7_cancelling_closes_the_stream_and_posts_nothing() {
    let (closed_tx, closed_rx) = oneshot::channel::<()>();
    let closed_tx = Arc::new(Mutex::new(Some(closed_tx)));
    let server = Fake::start(move |req| {
        let closed_tx = closed_tx.clone();
        async move {
            if !req.is_post("tools/call") {
                return modern_standard(&req);
            }
            let (tx, response) = fake::sse_channel(4);
            tx.send(Bytes::from(format!("data: {}\n\n", progress())))
                .await
                .unwrap();
            tokio::spawn(async move {
                // Working, until the client goes away: at most 200 beats.
                for _ in 0..200 {
                    tokio::select! {
                        () = tx.closed() => break,
                        () = tokio::time::sleep(Duration::from_millis(25)) => {
                            if tx.send(Bytes::from_static(b": working\n\n")).await.is_err() {
                                break;
                            }
                        }
                    }
                }
                if tx.is_closed()
                    && let Some(closed) = closed_tx.lock().unwrap().take()
                {
                    let _ = closed.send(());
                }
            });
            response
        }
    })
    .await;
    let mut conn = connect(builder(&server.url).family(Family::PerRequest)).await;
    send(&conn, tool_call(2, "slow")).await.unwrap();
    assert_eq!(
        recv(&mut conn).await.method(),
        Some("notifications/progress")
    );

    let cancel = Notification::new(
        "notifications/cancelled",
        Some(to_raw_value(&json!({"requestId": 2, "reason": "no longer needed"})).unwrap()),
    );
    send(&conn, cancel.into()).await.unwrap();
    within(closed_rx)
        .await
        .expect("the server saw the stream closed");
    // Nothing more for the cancelled request, not even a lost-response error.
    assert_quiet(&mut conn, Duration::from_millis(100)).await;

    // The connection goes on.
    send(&conn, request(3, "ping")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(3)));
    let log = server.requests();
    assert!(
        posts(&log, "notifications/cancelled").is_empty(),
        "{log:#?}"
    );
    assert_eq!(log.len(), 2);
}

#[tokio::test]
async fn m7_a_broken_stream_is_resent_with_a_new_id() {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = Fake::start({
        let calls = calls.clone();
        move |req| {
            let calls = calls.clone();
            async move {
                if !req.is_post("tools/call") {
                    return modern_standard(&req);
                }
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    // A notification, then the stream ends without the response.
                    return fake::sse(format!("id: e1\ndata: {}\n\n", progress()));
                }
                let response = fake::result(&req.id(), json!({"content": []}));
                fake::sse(format!("data: {response}\n\n"))
            }
        }
    })
    .await;
    let mut conn = connect(builder(&server.url).family(Family::PerRequest)).await;
    send(&conn, tool_call(2, "flaky")).await.unwrap();
    assert_eq!(
        recv(&mut conn).await.method(),
        Some("notifications/progress")
    );
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(2)));
    assert_eq!(response.result().unwrap().get(), r#"{"content":[]}"#);
    assert_quiet(&mut conn, Duration::from_millis(100)).await;

    let log = server.requests();
    let tries = posts(&log, "tools/call");
    assert_eq!(tries.len(), 2, "{log:#?}");
    assert_eq!(tries[0].id(), json!(2));
    let new_id = tries[1].id();
    let new_id = new_id.as_str().expect("a string id");
    assert!(new_id != "2" && new_id.starts_with('2'), "{new_id}");
    for req in &tries {
        assert_eq!(req.header("mcp-protocol-version"), Some(MODERN));
        assert_eq!(req.header("mcp-name"), Some("flaky"));
        assert_eq!(req.header("last-event-id"), None);
        assert_eq!(req.json()["params"], tries[0].json()["params"]);
    }
    assert_eq!(server.count(Method::GET), 0);
}

#[tokio::test]
async fn m7_a_spent_resend_budget_answers_with_a_lost_response() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/call") {
            return fake::sse(": nothing for you\n\n");
        }
        modern_standard(&req)
    })
    .await;
    let policy = ReconnectPolicy::default()
        .initial_delay(Duration::from_millis(5))
        .max_retries(2);
    let mut conn = connect(
        builder(&server.url)
            .family(Family::PerRequest)
            .reconnect(policy),
    )
    .await;
    send(&conn, tool_call(2, "never")).await.unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(2)));
    let error = response.result().unwrap_err();
    assert_eq!(error.code, LOST_RESPONSE_CODE);
    assert!(error.message.contains("2 attempts"), "{}", error.message);

    let log = server.requests();
    let ids: Vec<_> = posts(&log, "tools/call").iter().map(|r| r.id()).collect();
    assert_eq!(ids.len(), 3, "{log:#?}");
    assert_eq!(ids[0], json!(2));
    assert!(
        ids[1].is_string() && ids[2].is_string() && ids[1] != ids[2],
        "{ids:?}"
    );
}

#[tokio::test]
async fn m7_no_get_and_no_delete_in_modern() {
    let server = Fake::start(|req| async move { modern_standard(&req) }).await;
    // Auto, with the standalone stream on: discovery finds a modern endpoint.
    let client = builder(&server.url).build().unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    send(&conn, request(1, "tools/list")).await.unwrap();
    recv_response(&mut conn).await;
    send(&conn, request(2, "prompts/list")).await.unwrap();
    recv_response(&mut conn).await;
    settle(Duration::from_secs(1)).await;
    within(conn.close()).await.unwrap();
    drop(conn);
    settle(Duration::from_secs(1)).await;

    assert_eq!(client.family(), Some(Family::PerRequest));
    let log = server.requests();
    assert_eq!(log.len(), 2, "{log:#?}");
    assert!(log.iter().all(|r| r.method == Method::POST && is_modern(r)));
    assert_eq!(server.count(Method::GET), 0);
    assert_eq!(server.count(Method::DELETE), 0);
}
