use http::StatusCode;
use mcp_streamable_server::Config;
use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn initialize_then_call_a_tool() {
    let service = service(Config::default());
    let id = initialize(&service, "2025-06-18").await;
    let response = service
        .handle(request(
            post(Some(&id)),
            call(1, "echo", json!({"text": "hi"})),
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let events = sse_events(response, 10).await;
    let msgs = messages(&events);
    assert_eq!(msgs.len(), 1);
    assert_eq!(result_of(&msgs[0]), crate::app::text("hi"));
}

#[tokio::test]
async fn json_response_mode_answers_with_one_json_body() {
    let service = service(Config::default().json_response(true));
    let response = service
        .handle(request(post(None), initialize_body(0, "2025-06-18")))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert!(session_id(response.headers()).is_some());
    let body: serde_json::Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");
}
