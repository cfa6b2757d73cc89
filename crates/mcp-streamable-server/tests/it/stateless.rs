//! S20: stateless mode.

use std::sync::atomic::Ordering;

use http::StatusCode;
use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_server::{Config, InMemoryEventStore, ServerConnection, codes};
use mcp_transport::{Connection, Sender};
use serde_json::{Value, json};

use crate::harness::*;
use crate::lifecycle::{counting, settle};

#[tokio::test]
async fn s20_each_post_is_served_on_its_own_without_a_session() {
    let (service, started, ended) = counting(Config::default().stateless());
    for i in 0..5 {
        // Whatever session id a client sends is ignored.
        let b = if i % 2 == 0 {
            post(None)
        } else {
            post(Some("whatever"))
        };
        let response = service
            .handle(request(
                b,
                call(i, "echo", json!({"text": format!("t{i}")})),
            ))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(session_id(response.headers()).is_none());
        let msgs = messages(&sse_events(response, 10).await);
        assert_eq!(result_of(&msgs[0]), crate::app::text(&format!("t{i}")));
    }
    let response = service
        .handle(request(post(None), note("notifications/initialized")))
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    settle().await;
    assert_eq!(
        started.load(Ordering::SeqCst),
        6,
        "the factory runs once per POST"
    );
    assert_eq!(
        ended.load(Ordering::SeqCst),
        6,
        "each transient session ends"
    );
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn s20_get_and_delete_are_405() {
    let service = service(Config::default().stateless());
    for req in [get("x", None), delete("x")] {
        let response = service.handle(req).await;
        assert_eq!(response.headers()["allow"], "POST");
        let (code, _, _) = refusal(response, StatusCode::METHOD_NOT_ALLOWED).await;
        assert_eq!(code, codes::TRANSPORT_ERROR);
    }
}

#[tokio::test]
async fn s20_server_requests_and_unrelated_messages_fail_at_once() {
    let service = service(Config::default().stateless());
    let response = service
        .handle(request(post(None), call(1, "ask", json!({}))))
        .await;
    let msgs = messages(&sse_events(response, 10).await);
    let Message::Response(r) = &msgs[0] else {
        panic!("not a response");
    };
    let error = r.result().expect_err("the ask fails");
    assert!(error.message.contains("stateless"), "{}", error.message);
    // A limit of the transport by design, not a peer breaking a rule.
    assert!(
        error.message.contains("not supported by this transport"),
        "{}",
        error.message
    );
    let msgs = call_tool_stateless(&service, 2, "flood", json!({"count": 3})).await;
    assert_eq!(result_of(&msgs[0]), json!({"failed": 3}));
}

async fn call_tool_stateless(
    service: &mcp_streamable_server::StreamableHttpService,
    id: i64,
    tool: &str,
    args: Value,
) -> Vec<Message> {
    let response = service
        .handle(request(post(None), call(id, tool, args)))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    messages(&sse_events(response, 10).await)
}

/// Takes one request, answers it and returns, dropping the connection.
async fn one_shot(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    if let Ok(Some(Message::Request(r))) = conn.recv().await {
        let result = to_raw_value(&json!({"once": true})).unwrap();
        sender
            .send(Response::success(r.id, result).into())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn s20_a_one_shot_application_is_answered() {
    for json_mode in [false, true] {
        let service = service_with(
            Config::default().stateless().json_response(json_mode),
            one_shot,
        );
        for i in 0..3 {
            let response = service.handle(request(post(None), ping(i))).await;
            assert_eq!(response.status(), StatusCode::OK);
            let msgs = if json_mode {
                vec![
                    mcp_jsonrpc::parse(&body_bytes(response).await)
                        .unwrap()
                        .into_messages()
                        .remove(0),
                ]
            } else {
                messages(&sse_events(response, 10).await)
            };
            assert_eq!(msgs.len(), 1, "json mode {json_mode}");
            assert_eq!(result_of(&msgs[0]), json!({"once": true}));
        }
    }
}

#[tokio::test]
async fn s20_stateless_mode_keeps_no_events() {
    let store = InMemoryEventStore::default();
    let service = service(Config::default().stateless().event_store(store.clone()));
    for i in 0..3 {
        let response = service
            .handle(request(
                post(None).header("mcp-protocol-version", "2025-11-25"),
                call(i, "progress", json!({"steps": 2})),
            ))
            .await;
        let mut sse = Sse::new(response);
        assert_eq!(messages(&sse.rest(10).await).len(), 3);
        assert!(
            !sse.raw_text().contains("id:"),
            "no ids: nothing can resume without a session: {}",
            sse.raw_text()
        );
    }
    settle().await;
    assert_eq!(store.retained_bytes(), 0);
    assert_eq!(store.session_count(), 0);
}

#[tokio::test]
async fn s20_json_mode() {
    let service = service(Config::default().stateless().json_response(true));
    let response = service.handle(request(post(None), ping(1))).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
    assert_eq!(body, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
}
