//! Defects found from outside, each pinned: a batch bounded in size and checked in linear time
//! (S9, S19), only a valid `initialize` starts a session (S6), streams resumed from an id with
//! nothing after it (S11), and no panic reachable from the network.

use http::{Method, Request, StatusCode};
use http_body_util::Full;
use mcp_jsonrpc::{Body, Id, Message, code};
use mcp_streamable_server::{Config, InMemoryEventStore, StreamableHttpService, codes};
use serde_json::{Value, json};

use crate::harness::*;

fn pings(ids: impl IntoIterator<Item = i64>) -> String {
    let all: Vec<Value> = ids
        .into_iter()
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .collect();
    Value::Array(all).to_string()
}

/// A batch on a 2025-03-26 session.
async fn batch(
    service: &StreamableHttpService,
    sid: &str,
    body: String,
) -> http::Response<mcp_streamable_server::ResponseBody> {
    let b = with(post(Some(sid)), "mcp-protocol-version", "2025-03-26");
    service.handle(request(b, body)).await
}

/// The answers of a batch's SSE reply.
async fn answers(response: http::Response<mcp_streamable_server::ResponseBody>) -> usize {
    assert_eq!(response.status(), StatusCode::OK);
    messages(&sse_events(response, 10_000).await).len()
}

/// S9: past `max_batch_messages` a batch is refused whole with -32600 and none of it reaches
/// the application; at the bound it is answered in full. Before, every batch the body limit
/// admitted was taken, about 95,000 pings in 4 MiB.
#[tokio::test]
async fn s9_a_batch_past_the_bound_is_refused_whole() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-03-26").await;
    let refused = batch(&service, &sid, pings(1..=1_001)).await;
    let (code, id, message) = refusal(refused, StatusCode::BAD_REQUEST).await;
    assert_eq!((code, id), (code::INVALID_REQUEST, None));
    assert!(
        message.contains("1001") && message.contains("1000"),
        "{message}"
    );
    assert_eq!(
        answers(batch(&service, &sid, pings(1..=1_000)).await).await,
        1_000
    );

    let service = crate::harness::service(Config::default().max_batch_messages(3));
    let sid = initialize(&service, "2025-03-26").await;
    let refused = batch(&service, &sid, pings(1..=4)).await;
    assert_eq!(
        refusal(refused, StatusCode::BAD_REQUEST).await.0,
        code::INVALID_REQUEST
    );
    assert_eq!(answers(batch(&service, &sid, pings(1..=3)).await).await, 3);
}

/// S19: a repeated id is found wherever it stands in a batch, and an id in flight in the
/// session too; the check is one pass over the batch.
#[tokio::test]
async fn s19_a_repeated_id_is_found_anywhere_in_a_large_batch() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-03-26").await;
    let mut ids: Vec<i64> = (1..=1_000).collect();
    ids[999] = 1;
    let refused = batch(&service, &sid, pings(ids)).await;
    let (_, _, message) = refusal(refused, StatusCode::BAD_REQUEST).await;
    assert!(
        message.contains("request id 1 is already in flight"),
        "{message}"
    );
    // Nothing of the refused batch was delivered: the same ids go through now.
    assert_eq!(
        answers(batch(&service, &sid, pings(1..=1_000)).await).await,
        1_000
    );
}

/// S6: only a valid `initialize` (a `protocolVersion` string, `capabilities` and `clientInfo`
/// objects) starts a session; anything else is 400 with -32602 and registers nothing. Before,
/// `params: {}` started one.
#[tokio::test]
async fn s6_only_a_valid_initialize_starts_a_session() {
    let service = service(Config::default());
    let bad = [
        json!({}),
        json!([]),
        json!(null),
        json!({"capabilities": {}, "clientInfo": {}}),
        json!({"protocolVersion": 20251125, "capabilities": {}, "clientInfo": {}}),
        json!({"protocolVersion": "2025-11-25", "clientInfo": {}}),
        json!({"protocolVersion": "2025-11-25", "capabilities": "all", "clientInfo": {}}),
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": ["c"]}),
    ];
    for params in bad {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": params});
        let response = service.handle(request(post(None), body.to_string())).await;
        assert!(session_id(response.headers()).is_none(), "{params}");
        let (code, id, _) = refusal(response, StatusCode::BAD_REQUEST).await;
        assert_eq!(
            (code, id),
            (code::INVALID_PARAMS, Some(Id::from(7))),
            "{params}"
        );
        assert_eq!(service.session_count(), 0, "{params}");
    }
    let without = json!({"jsonrpc": "2.0", "id": 8, "method": "initialize"});
    let response = service
        .handle(request(post(None), without.to_string()))
        .await;
    assert_eq!(
        refusal(response, StatusCode::BAD_REQUEST).await.0,
        code::INVALID_PARAMS
    );
    assert_eq!(service.session_count(), 0);
    initialize(&service, "2025-11-25").await;
    assert_eq!(service.session_count(), 1);
}

fn with_store() -> Config {
    Config::default().event_store(InMemoryEventStore::default())
}

/// S11: the standalone stream, cut before any message was sent on it, resumes from its
/// priming id and carries on live. Before, the id was refused as "purged" once the session
/// had stored anything, though nothing was purged.
#[tokio::test]
async fn s11_a_standalone_stream_cut_before_any_message_resumes() {
    let service = service(with_store());
    let sid = initialize(&service, "2025-11-25").await;
    // The store holds events of the session's request streams.
    let echoed = call_tool(&service, &sid, 1, "echo", json!({"text": "a"})).await;
    assert_eq!(echoed.len(), 1);
    let mut first = Sse::new(service.handle(get(&sid, None)).await);
    let priming = first.until_id().await;
    drop(first);
    let resumed = service.handle(get(&sid, Some(&priming))).await;
    assert_eq!(resumed.status(), StatusCode::OK, "resuming {priming}");
    let mut resumed = Sse::new(resumed);
    call_tool(&service, &sid, 2, "broadcast", json!({"text": "hi"})).await;
    let event = resumed.next().await.expect("the broadcast, live");
    assert_eq!(label(&message(&event)), "n:notifications/message");
}

/// S11: a request stream whose request is still running, cut after its priming event, resumes
/// from that id though later streams of the session have stored events since. Before, it was
/// refused as "purged".
#[tokio::test(start_paused = true)]
async fn s11_a_running_request_resumes_from_its_priming_id() {
    let service = service(with_store());
    let sid = initialize(&service, "2025-11-25").await;
    let slow = service
        .handle(request(
            post(Some(&sid)),
            call(1, "sleep", json!({"ms": 500})),
        ))
        .await;
    let mut slow = Sse::new(slow);
    let priming = slow.until_id().await;
    drop(slow);
    // A later stream stores its answer meanwhile.
    call_tool(&service, &sid, 2, "echo", json!({"text": "b"})).await;
    let resumed = service.handle(get(&sid, Some(&priming))).await;
    assert_eq!(resumed.status(), StatusCode::OK, "resuming {priming}");
    let events = Sse::new(resumed).rest(10).await;
    let labels: Vec<String> = messages(&events).iter().map(label).collect();
    assert_eq!(labels, ["r1"]);
}

/// No panic is reachable from the network: each row reaches a place that once held an
/// `expect`, an `unreachable!` or arithmetic that could wrap, and gets an answer; a good
/// session goes on throughout.
#[tokio::test]
async fn no_panic_from_hostile_input() {
    let service = service(with_store().max_batch_messages(50));
    let good = initialize(&service, "2025-11-25").await;
    let sid = initialize(&service, "2025-03-26").await;
    let modern = |extra: &[(&'static str, &str)], body: Value| {
        let mut b = post(None).header("mcp-protocol-version", "2026-07-28");
        for (name, value) in extra {
            b = b.header(*name, *value);
        }
        request(b, body.to_string())
    };
    let rows: Vec<(&str, Request<Full<bytes::Bytes>>, StatusCode)> = vec![
        // classify and validate once disagreed behind an `unreachable!`.
        (
            "per-request notification named by its header only",
            modern(
                &[("mcp-method", "notifications/x")],
                json!({"jsonrpc": "2.0", "method": "notifications/x"}),
            ),
            StatusCode::ACCEPTED,
        ),
        (
            "per-request request without _meta",
            modern(
                &[("mcp-method", "ping")],
                json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            ),
            StatusCode::BAD_REQUEST,
        ),
        (
            "per-request name of undecodable base64",
            modern(
                &[
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "=?base64?/w==?="),
                ],
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}),
            ),
            StatusCode::BAD_REQUEST,
        ),
        (
            "batch of duplicates past the bound",
            request(
                with(post(Some(&sid)), "mcp-protocol-version", "2025-03-26"),
                pings(std::iter::repeat_n(1, 10_000)),
            ),
            StatusCode::BAD_REQUEST,
        ),
        (
            "event id of the largest numbers",
            get(&good, Some("18446744073709551615_18446744073709551615")),
            StatusCode::BAD_REQUEST,
        ),
        (
            "event id past the standalone stream",
            get(&good, Some("0_18446744073709551615")),
            StatusCode::BAD_REQUEST,
        ),
        (
            "event id of a number too large",
            get(&good, Some("18446744073709551616_0")),
            StatusCode::BAD_REQUEST,
        ),
        (
            "initialize whose params are a string",
            request(
                post(None),
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}"#,
            ),
            StatusCode::BAD_REQUEST,
        ),
        (
            "a response for a request never made",
            request(
                post(Some(&good)),
                r#"{"jsonrpc":"2.0","id":"srv-9","result":{}}"#,
            ),
            StatusCode::ACCEPTED,
        ),
        (
            "an error response with a null id",
            request(
                post(Some(&good)),
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#,
            ),
            StatusCode::ACCEPTED,
        ),
        (
            "DELETE of a session id of 128 characters",
            Request::builder()
                .method(Method::DELETE)
                .uri("http://localhost/mcp")
                .header("host", "localhost")
                .header("mcp-session-id", "x".repeat(128))
                .body(Full::default())
                .unwrap(),
            StatusCode::NOT_FOUND,
        ),
    ];
    for (what, req, status) in rows {
        let response = service.handle(req).await;
        assert_eq!(response.status(), status, "{what}");
        let _ = body_bytes(response).await;
        let answer = call_tool(&service, &good, 100, "echo", json!({"text": what})).await;
        assert_eq!(result_of(&answer[0]), crate::app::text(what), "{what}");
    }
    // A second DELETE of the same session, and a request on it after: 404s, no panic.
    for expected in [StatusCode::NO_CONTENT, StatusCode::NOT_FOUND] {
        let response = service.handle(delete(&sid)).await;
        assert_eq!(response.status(), expected);
    }
    let after = service.handle(request(post(Some(&sid)), ping(1))).await;
    let (code, _, _) = refusal(after, StatusCode::NOT_FOUND).await;
    assert_eq!(code, codes::SESSION_NOT_FOUND);
    let answer = call_tool(&service, &good, 101, "echo", json!({"text": "end"})).await;
    assert!(matches!(
        Body::Single(answer[0].clone()),
        Body::Single(Message::Response(_))
    ));
}

/// S8: a request of a session speaks the version the session negotiated; another supported
/// version in its header is 400, so that a 2025-06-18 session cannot send batches by claiming
/// 2025-03-26. Before, the header was taken at its word.
#[tokio::test]
async fn s8_a_version_other_than_the_negotiated_one_is_refused() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let claimed = batch(&service, &sid, pings(1..=2)).await;
    let (_, _, message) = refusal(claimed, StatusCode::BAD_REQUEST).await;
    assert!(message.contains("negotiated 2025-06-18"), "{message}");
    let single = with(post(Some(&sid)), "mcp-protocol-version", "2025-11-25");
    let response = service.handle(request(single, ping(3))).await;
    let (_, id, _) = refusal(response, StatusCode::BAD_REQUEST).await;
    assert_eq!(id, Some(Id::from(3)));
    let right = with(post(Some(&sid)), "mcp-protocol-version", "2025-06-18");
    let response = service.handle(request(right, ping(4))).await;
    assert_eq!(messages(&sse_events(response, 10).await).len(), 1);
}

/// S7: a session started by one owner (as a layer in front put it in the request's
/// extensions) is unknown to everyone else: another owner's request, or one with no owner,
/// naming it is 404 on POST, GET and DELETE, and the owner goes on unharmed.
#[tokio::test]
async fn s7_a_session_is_unknown_to_all_but_its_owner() {
    use mcp_streamable_server::SessionOwner;
    let service = service(Config::default());
    let as_owner = |mut r: Request<Full<bytes::Bytes>>, owner: Option<&str>| {
        if let Some(owner) = owner {
            r.extensions_mut().insert(SessionOwner::new(owner));
        }
        r
    };
    let init = as_owner(
        request(post(None), initialize_body(0, "2025-11-25")),
        Some("alice"),
    );
    let response = service.handle(init).await;
    let sid = session_id(response.headers()).expect("a session");
    let _ = sse_events(response, 10).await;
    for intruder in [Some("mallory"), None] {
        let posted = as_owner(request(post(Some(&sid)), ping(1)), intruder);
        let (code, _, _) = refusal(service.handle(posted).await, StatusCode::NOT_FOUND).await;
        assert_eq!(code, codes::SESSION_NOT_FOUND, "{intruder:?}");
        let got = service.handle(as_owner(get(&sid, None), intruder)).await;
        assert_eq!(got.status(), StatusCode::NOT_FOUND, "{intruder:?}");
        let deleted = service.handle(as_owner(delete(&sid), intruder)).await;
        assert_eq!(deleted.status(), StatusCode::NOT_FOUND, "{intruder:?}");
    }
    let posted = as_owner(request(post(Some(&sid)), ping(2)), Some("alice"));
    let answer = messages(&sse_events(service.handle(posted).await, 10).await);
    assert_eq!(label(&answer[0]), "r2");
    let deleted = service.handle(as_owner(delete(&sid), Some("alice"))).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
}

/// S11, S12: a `Last-Event-ID` the store refuses leaves the stream and its reader alone; only a
/// resumption that is served takes the stream over.
#[tokio::test]
async fn s11_a_refused_resumption_does_not_take_the_stream_over() {
    let service = service(with_store());
    let sid = initialize(&service, "2025-11-25").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    standalone.until_id().await;
    let refused = service.handle(get(&sid, Some("0_999"))).await;
    let (_, _, why) = refusal(refused, StatusCode::BAD_REQUEST).await;
    assert!(why.contains("unknown Last-Event-ID"), "{why}");
    call_tool(
        &service,
        &sid,
        1,
        "broadcast",
        json!({"text": "still here"}),
    )
    .await;
    let event = standalone
        .next()
        .await
        .expect("the broadcast, on the first reader");
    assert_eq!(label(&message(&event)), "n:notifications/message");
}
