//! S10 and S12: which stream each message goes on, and the standalone stream's takeover.

use http::StatusCode;
use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_server::{Config, ServerConnection};
use mcp_transport::{Connection, Sender};
use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn s10_a_response_and_what_its_handler_sends_go_on_the_request_stream() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    let msgs = call_tool(&service, &sid, 1, "progress", json!({"steps": 4})).await;
    assert_eq!(
        msgs.iter().map(label).collect::<Vec<_>>(),
        ["p1", "p2", "p3", "p4", "r1"]
    );
    // Nothing of it on the standalone stream: the next thing there is this broadcast.
    call_tool(&service, &sid, 2, "broadcast", json!({"text": "b"})).await;
    let event = standalone.next().await.unwrap();
    assert_eq!(label(&message(&event)), "n:notifications/message");
}

#[tokio::test]
async fn s10_unrelated_messages_go_on_the_standalone_stream() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    let msgs = call_tool(
        &service,
        &sid,
        1,
        "broadcast",
        json!({"text": "hi", "count": 3}),
    )
    .await;
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    for i in 0..3 {
        let Message::Notification(n) = message(&standalone.next().await.unwrap()) else {
            panic!("not a notification");
        };
        let params: serde_json::Value = n.parse_params().unwrap();
        assert_eq!(params["i"], i);
        assert_eq!(params["data"], "hi");
    }
}

#[tokio::test]
async fn s10_a_message_sent_after_the_last_response_goes_on_the_standalone_stream() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    let msgs = call_tool(&service, &sid, 1, "late", json!({"text": "x"})).await;
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    let event = standalone.next().await.unwrap();
    let Message::Notification(n) = message(&event) else {
        panic!("not a notification: {event:?}");
    };
    assert_eq!(
        n.parse_params::<serde_json::Value>().unwrap()["data"],
        "late"
    );
}

#[tokio::test]
async fn s10_a_server_request_goes_on_the_request_stream_and_its_answer_is_202() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let response = service
        .handle(request(post(Some(&sid)), call(1, "ask", json!({}))))
        .await;
    let mut sse = Sse::new(response);
    let Message::Request(ask) = message(&sse.next().await.unwrap()) else {
        panic!("not a request");
    };
    assert_eq!(ask.method, "sampling/createMessage");
    let answer = Response::success(ask.id, to_raw_value(&json!({"ok": 1})).unwrap());
    let response = service
        .handle(request(post(Some(&sid)), Message::from(answer).to_vec()))
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let rest = messages(&sse.rest(10).await);
    assert_eq!(rest.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    assert_eq!(result_of(&rest[0])["client said"], r#"{"ok":1}"#);
}

#[tokio::test]
async fn s10_the_standalone_stream_buffers_until_a_get_connects() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    call_tool(
        &service,
        &sid,
        1,
        "broadcast",
        json!({"text": "early", "count": 2}),
    )
    .await;
    let mut standalone = Sse::new(service.handle(get(&sid, None)).await);
    for i in 0..2 {
        let Message::Notification(n) = message(&standalone.next().await.unwrap()) else {
            panic!("not a notification");
        };
        assert_eq!(n.parse_params::<serde_json::Value>().unwrap()["i"], i);
    }
}

#[tokio::test(start_paused = true)]
async fn s10_concurrent_requests_keep_to_their_own_streams() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let a = service
        .handle(request(
            post(Some(&sid)),
            call(1, "progress", json!({"steps": 5, "delay_ms": 10})),
        ))
        .await;
    let b = service
        .handle(request(
            post(Some(&sid)),
            call(2, "progress", json!({"steps": 3, "delay_ms": 15})),
        ))
        .await;
    let (a, b) = tokio::join!(sse_events(a, 100), sse_events(b, 100));
    let labels = |e: &[mcp_sse::Event]| messages(e).iter().map(label).collect::<Vec<_>>();
    assert_eq!(labels(&a), ["p1", "p2", "p3", "p4", "p5", "r1"]);
    assert_eq!(labels(&b), ["p1", "p2", "p3", "r2"]);
}

/// Answers one request, then closes the connection at once.
async fn answer_once_then_close(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        if let Message::Request(r) = message {
            let last = r.method == "tools/call";
            let result = if r.method == "initialize" {
                json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "t", "version": "0"}})
            } else {
                json!({"bye": true})
            };
            let response = Response::success(r.id, to_raw_value(&result).unwrap());
            sender.send(response.into()).await.unwrap();
            if last {
                let _ = conn.close().await;
                return;
            }
        }
    }
}

#[tokio::test]
async fn s10_a_response_sent_just_before_the_app_closes_is_delivered() {
    let service = service_with(Config::default(), answer_once_then_close);
    let sid = initialize(&service, "2025-06-18").await;
    let response = service
        .handle(request(post(Some(&sid)), call(1, "anything", json!({}))))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let msgs = messages(&sse_events(response, 10).await);
    assert_eq!(msgs.iter().map(label).collect::<Vec<_>>(), ["r1"]);
    assert_eq!(result_of(&msgs[0]), json!({"bye": true}));
    // The session is over all the same.
    let response = service.handle(request(post(Some(&sid)), ping(2))).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn s12_a_new_get_takes_over_and_nothing_queued_is_lost() {
    let service = service(Config::default());
    let sid = initialize(&service, "2025-06-18").await;
    let mut first = Sse::new(service.handle(get(&sid, None)).await);
    call_tool(&service, &sid, 1, "broadcast", json!({"text": "one"})).await;
    let event = first.next().await.unwrap();
    assert_eq!(label(&message(&event)), "n:notifications/message");
    // Queued while the first GET is not read.
    call_tool(
        &service,
        &sid,
        2,
        "broadcast",
        json!({"text": "two", "count": 2}),
    )
    .await;
    let mut second = Sse::new(service.handle(get(&sid, None)).await);
    // The first ends cleanly, without the messages meant for the second.
    assert!(first.ends().await, "the old GET must end");
    for i in 0..2 {
        let Message::Notification(n) = message(&second.next().await.unwrap()) else {
            panic!("not a notification");
        };
        let params: serde_json::Value = n.parse_params().unwrap();
        assert_eq!(
            (params["data"].as_str(), params["i"].as_u64()),
            (Some("two"), Some(i))
        );
    }
    // Later messages go to the new one.
    call_tool(&service, &sid, 3, "broadcast", json!({"text": "three"})).await;
    let Message::Notification(n) = message(&second.next().await.unwrap()) else {
        panic!("not a notification");
    };
    assert_eq!(
        n.parse_params::<serde_json::Value>().unwrap()["data"],
        "three"
    );
}

#[tokio::test]
async fn s12_takeover_wakes_an_old_get_that_is_waiting() {
    let service = service(Config::default().keep_alive(None));
    let sid = initialize(&service, "2025-06-18").await;
    let mut first = Sse::new(service.handle(get(&sid, None)).await);
    // Read the opening comment; the body now waits with its waker registered.
    first.frame_within(WAIT).await.unwrap();
    let reader = tokio::spawn(async move { first.ends().await });
    tokio::task::yield_now().await;
    let _second = service.handle(get(&sid, None)).await;
    assert!(
        tokio::time::timeout(WAIT, reader).await.unwrap().unwrap(),
        "the old GET must end when a new one takes over"
    );
}
