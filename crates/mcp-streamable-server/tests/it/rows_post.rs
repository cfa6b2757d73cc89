//! S1-S9 and S19: the endpoint, its headers, sessions, versions and batches.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body::Frame;
use mcp_jsonrpc::{Id, Message};
use mcp_streamable_server::{Config, codes};
use serde_json::{Value, json};

use crate::harness::*;

#[tokio::test]
async fn s1_other_methods_are_405_with_allow() {
    let service = service(Config::default());
    for method in [
        Method::PUT,
        Method::PATCH,
        Method::OPTIONS,
        Method::HEAD,
        Method::CONNECT,
    ] {
        let response = service
            .handle(
                post(None)
                    .method(method.clone())
                    .body(http_body_util::Full::new(Bytes::from(ping(1))))
                    .unwrap(),
            )
            .await;
        assert_eq!(response.headers()["allow"], "GET, POST, DELETE", "{method}");
        let (code, id, message) = refusal(response, StatusCode::METHOD_NOT_ALLOWED).await;
        assert_eq!(code, codes::TRANSPORT_ERROR);
        assert_eq!(id, None);
        assert!(message.contains(method.as_str()), "{message}");
    }
}

#[tokio::test]
async fn s2_post_accept_must_admit_json_and_event_stream() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let admitted: &[&[&str]] = &[
        &["application/json, text/event-stream"],
        &["application/json", "text/event-stream"],
        &["text/event-stream;q=0.5, application/json;q=0.9"],
        &["*/*"],
        &["application/*, text/*"],
        &["application/json, */*;q=0.1"],
    ];
    for (i, values) in admitted.iter().enumerate() {
        let mut b = post(Some(&sid));
        b.headers_mut().unwrap().remove("accept");
        for v in *values {
            b = b.header("accept", *v);
        }
        let response = service.handle(request(b, ping(i as i64 + 1))).await;
        assert_eq!(response.status(), StatusCode::OK, "{values:?}");
        let msgs = messages(&sse_events(response, 10).await);
        assert_eq!(msgs.len(), 1);
    }
    let refused: &[&[&str]] = &[
        &[],
        &["application/json"],
        &["text/event-stream"],
        &["text/html"],
        &["application/json, text/event-stream;q=0"],
        &["application/json-seq, text/plain"],
    ];
    for values in refused {
        let mut b = post(Some(&sid));
        b.headers_mut().unwrap().remove("accept");
        for v in *values {
            b = b.header("accept", *v);
        }
        let response = service.handle(request(b, ping(99))).await;
        let (code, id, message) = refusal(response, StatusCode::NOT_ACCEPTABLE).await;
        assert_eq!(code, codes::TRANSPORT_ERROR, "{values:?}");
        assert_eq!(id, None);
        assert!(message.contains("Accept"), "{message}");
    }
}

#[tokio::test]
async fn s2_get_accept_must_admit_event_stream() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    for accept in ["application/json", "text/html", "text/event-stream;q=0"] {
        let mut req = get(&sid, None);
        req.headers_mut().insert("accept", accept.parse().unwrap());
        let response = service.handle(req).await;
        refusal(response, StatusCode::NOT_ACCEPTABLE).await;
    }
    for accept in ["text/event-stream", "*/*", "text/*"] {
        let mut req = get(&sid, None);
        req.headers_mut().insert("accept", accept.parse().unwrap());
        let response = service.handle(req).await;
        assert_eq!(response.status(), StatusCode::OK, "{accept}");
    }
}

#[tokio::test]
async fn s3_content_type_must_be_json() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    for ct in ["application/json; charset=utf-8", "Application/JSON"] {
        let mut b = post(Some(&sid));
        b.headers_mut()
            .unwrap()
            .insert("content-type", ct.parse().unwrap());
        let response = service.handle(request(b, ping(1))).await;
        assert_eq!(response.status(), StatusCode::OK, "{ct}");
        sse_events(response, 10).await;
    }
    for ct in [
        Some("text/plain"),
        Some("application/json-seq"),
        Some("multipart/form-data"),
        None,
    ] {
        let mut b = post(Some(&sid));
        match ct {
            Some(ct) => b
                .headers_mut()
                .unwrap()
                .insert("content-type", ct.parse().unwrap()),
            None => b.headers_mut().unwrap().remove("content-type"),
        };
        let response = service.handle(request(b, ping(2))).await;
        let (_, _, message) = refusal(response, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
        assert!(message.contains("Content-Type"), "{message}");
    }
}

/// A body that never ends, counting the bytes it has been asked for.
struct Endless {
    given: Arc<AtomicUsize>,
}

impl http_body::Body for Endless {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let chunk = Bytes::from(vec![b' '; 1000]);
        self.given.fetch_add(chunk.len(), Ordering::Relaxed);
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }
}

#[tokio::test]
async fn s3_body_over_the_limit_is_413() {
    let limit = 10_000;
    let service = service(Config::default().max_body_bytes(limit));
    let sid = initialize(&service, "2025-06-18").await;

    // Declared too large: refused before reading.
    let big = format!("{:width$}", ping(1), width = limit + 1);
    let response = service
        .handle(request(
            post(Some(&sid)).header("content-length", big.len()),
            big.clone(),
        ))
        .await;
    let (_, _, message) = refusal(response, StatusCode::PAYLOAD_TOO_LARGE).await;
    assert!(message.contains("10000"), "{message}");

    // No Content-Length, a body that never ends: read up to the limit, no further.
    let given = Arc::new(AtomicUsize::new(0));
    let endless = Endless {
        given: Arc::clone(&given),
    };
    let response = service
        .handle(post(Some(&sid)).body(endless).unwrap())
        .await;
    refusal(response, StatusCode::PAYLOAD_TOO_LARGE).await;
    assert!(
        given.load(Ordering::Relaxed) <= limit + 1000,
        "read {} bytes past a limit of {limit}",
        given.load(Ordering::Relaxed)
    );

    // Exactly at the limit: read and served.
    let at = format!("{:width$}", ping(2), width = limit);
    let response = service.handle(request(post(Some(&sid)), at)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(messages(&sse_events(response, 10).await).len(), 1);
}

#[tokio::test]
async fn s4_notifications_and_responses_are_accepted_with_202() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-03-26").await;
    let bodies = [
        note("notifications/cancelled"),
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}}).to_string(),
        json!([{"jsonrpc": "2.0", "method": "a"}, {"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "m"}}]).to_string(),
    ];
    for body in bodies {
        let response = service.handle(request(post(Some(&sid)), body)).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        assert!(body_bytes(response).await.is_empty());
    }
}

#[tokio::test]
async fn s4_requests_get_an_sse_stream_or_json_in_json_mode() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-03-26").await;
    let response = service.handle(request(post(Some(&sid)), ping(1))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let msgs = messages(&sse_events(response, 10).await);
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);

    let service = crate::harness::service(Config::default().json_response(true));
    let response = service
        .handle(request(post(None), initialize_body(0, "2025-03-26")))
        .await;
    let sid = session_id(response.headers()).unwrap();
    body_bytes(response).await;
    let response = service.handle(request(post(Some(&sid)), ping(1))).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
    assert_eq!(body, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    // A 03 batch with requests and a notification: an array of the responses only.
    let batch = format!("[{},{},{}]", ping(2), note("notifications/x"), ping(3));
    let response = service.handle(request(post(Some(&sid)), batch)).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
    let ids: Vec<&Value> = body.as_array().unwrap().iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!(2), &json!(3)]);
}

#[tokio::test]
async fn s5_json_mode_switches_to_sse_when_a_notification_comes_first() {
    let service = service(Config::default().json_response(true));
    let response = service
        .handle(request(post(None), initialize_body(0, "2025-06-18")))
        .await;
    let sid = session_id(response.headers()).unwrap();
    body_bytes(response).await;
    let response = service
        .handle(request(
            post(Some(&sid)),
            call(1, "progress", json!({"steps": 3})),
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let msgs = messages(&sse_events(response, 10).await);
    assert_eq!(
        msgs.iter().map(label).collect::<Vec<_>>(),
        ["p1", "p2", "p3", "r1"]
    );
}

#[tokio::test]
async fn s6_initialize_starts_a_session_with_a_random_visible_id() {
    let service = service(Config::default());
    let mut seen = HashSet::new();
    for _ in 0..50 {
        let id = initialize(&service, "2025-06-18").await;
        assert!(id.len() >= 32, "{id}: too short for 122 random bits");
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
        assert!(seen.insert(id));
    }
    assert_eq!(service.session_count(), 50);
}

#[tokio::test]
async fn s6_initialize_in_a_batch_is_400() {
    let service = service(Config::default());
    let batch = format!("[{},{}]", initialize_body(0, "2025-03-26"), ping(1));
    let response = service.handle(request(post(None), batch)).await;
    let (_, id, message) = refusal(response, StatusCode::BAD_REQUEST).await;
    assert_eq!(id, None);
    assert!(message.contains("batch"), "{message}");
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn s7_session_ids_are_required_and_checked() {
    let service = service(Config::default());
    // No session id: only initialize may start one.
    for body in [ping(1), note("notifications/initialized")] {
        let response = service.handle(request(post(None), body)).await;
        let (code, _, message) = refusal(response, StatusCode::BAD_REQUEST).await;
        assert_eq!(code, codes::TRANSPORT_ERROR);
        assert!(message.contains("Mcp-Session-Id"), "{message}");
    }
    // Unknown: 404, with the code clients look for.
    let response = service
        .handle(request(post(Some("no-such-session")), ping(2)))
        .await;
    let (code, _, message) = refusal(response, StatusCode::NOT_FOUND).await;
    assert_eq!(code, codes::SESSION_NOT_FOUND);
    assert!(message.contains("initialize"), "{message}");
    // Terminated: 404 too.
    let sid = initialize(&service, "2025-06-18").await;
    let response = service.handle(delete(&sid)).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    for req in [
        request(post(Some(&sid)), ping(3)),
        get(&sid, None),
        delete(&sid),
    ] {
        let (code, _, _) = refusal(service.handle(req).await, StatusCode::NOT_FOUND).await;
        assert_eq!(code, codes::SESSION_NOT_FOUND);
    }
    // initialize with a session id: 400, and the session lives on.
    let sid = initialize(&service, "2025-06-18").await;
    let response = service
        .handle(request(post(Some(&sid)), initialize_body(9, "2025-06-18")))
        .await;
    let (_, _, message) = refusal(response, StatusCode::BAD_REQUEST).await;
    assert!(message.contains("initialize"), "{message}");
    assert_eq!(
        call_tool(&service, &sid, 4, "echo", json!({"text": "still here"}))
            .await
            .len(),
        1
    );
}

#[tokio::test]
async fn s8_protocol_version_header() {
    let service = service(Config::default());
    // Accepted on initialize, in any letter case.
    let response = service
        .handle(request(
            post(None).header("MCP-PROTOCOL-VERSION", "2025-06-18"),
            initialize_body(0, "2025-06-18"),
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let sid = session_id(response.headers()).unwrap();
    sse_events(response, 10).await;
    // Unsupported: 400 naming the supported ones, on POST, GET and DELETE.
    for version in ["1999-01-01", "2024-11-05", "latest", ""] {
        for req in [
            request(
                post(Some(&sid)).header("Mcp-Protocol-Version", version),
                ping(1),
            ),
            {
                let mut r = get(&sid, None);
                r.headers_mut()
                    .insert("mcp-protocol-version", version.parse().unwrap());
                r
            },
            {
                let mut r = delete(&sid);
                r.headers_mut()
                    .insert("mcp-protocol-version", version.parse().unwrap());
                r
            },
        ] {
            let (_, _, message) = refusal(service.handle(req).await, StatusCode::BAD_REQUEST).await;
            assert!(message.contains("2025-06-18"), "{message}");
        }
    }
    // Absent: the session's version (06, so a batch is refused); present and supported: that.
    let batch = format!("[{},{}]", ping(2), ping(3));
    let response = service
        .handle(request(post(Some(&sid)), batch.clone()))
        .await;
    refusal(response, StatusCode::BAD_REQUEST).await;
    let response = service
        .handle(request(
            post(Some(&sid)).header("mcp-protocol-version", "2025-06-18"),
            ping(4),
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    // Absent with no session known: 03, where batches are allowed (here, in stateless mode).
    let stateless = crate::harness::service(Config::default().stateless());
    let response = stateless.handle(request(post(None), batch)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(messages(&sse_events(response, 10).await).len(), 2);
}

#[tokio::test]
async fn s9_batches_only_in_2025_03_26() {
    let service = service(Config::default());
    let batch = format!("[{},{}]", ping(1), ping(2));
    let sid = initialize(&service, "2025-03-26").await;
    let response = service
        .handle(request(post(Some(&sid)), batch.clone()))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let labels: Vec<String> = messages(&sse_events(response, 10).await)
        .iter()
        .map(label)
        .collect();
    assert_eq!(labels.len(), 2);
    assert!(labels.contains(&"r1".into()) && labels.contains(&"r2".into()));
    for version in ["2025-06-18", "2025-11-25"] {
        let sid = initialize(&service, version).await;
        let response = service
            .handle(request(post(Some(&sid)), batch.clone()))
            .await;
        let (_, _, message) = refusal(response, StatusCode::BAD_REQUEST).await;
        assert!(message.contains(version), "{message}");
    }
}

#[tokio::test(start_paused = true)]
async fn s19_a_second_request_in_flight_with_the_same_id_is_400() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-03-26").await;
    let first = service
        .handle(request(
            post(Some(&sid)),
            call(7, "sleep", json!({"ms": 1000})),
        ))
        .await;
    assert_eq!(first.status(), StatusCode::OK);
    let response = service.handle(request(post(Some(&sid)), ping(7))).await;
    let (_, _, message) = refusal(response, StatusCode::BAD_REQUEST).await;
    assert!(
        message.contains("7") && message.contains("in flight"),
        "{message}"
    );
    // A string id equal in text is another id.
    let response = service
        .handle(request(
            post(Some(&sid)),
            json!({"jsonrpc": "2.0", "id": "7", "method": "ping"}).to_string(),
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    sse_events(response, 10).await;
    // Within one batch.
    let response = service
        .handle(request(
            post(Some(&sid)),
            format!("[{},{}]", ping(8), ping(8)),
        ))
        .await;
    refusal(response, StatusCode::BAD_REQUEST).await;
    // Once answered, the id is free again.
    let msgs = messages(&sse_events(first, 10).await);
    assert_eq!(response_id(&msgs[0]), Some(Id::from(7)));
    let response = service.handle(request(post(Some(&sid)), ping(7))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let msgs = messages(&sse_events(response, 10).await);
    assert!(matches!(&msgs[..], [Message::Response(_)]));
}

#[tokio::test]
async fn s1_the_service_serves_whatever_path_it_is_mounted_at() {
    let service = service(Config::default());
    let response = service
        .handle(
            Request::post("http://localhost/some/other/path")
                .header("host", "localhost")
                .header("accept", ACCEPT_BOTH)
                .header("content-type", "application/json")
                .body(http_body_util::Full::new(Bytes::from(initialize_body(
                    0,
                    "2025-06-18",
                ))))
                .unwrap(),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
}
