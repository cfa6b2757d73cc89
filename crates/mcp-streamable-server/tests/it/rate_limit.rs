//! S26: rate limits per client. A client over its quota gets 429 with `Retry-After` and a
//! JSON-RPC error, while every other client is served; a method's quota of its own; what is not
//! charged. Paused time: the quotas' clock is tokio's.

use std::net::SocketAddr;
use std::time::Duration;

use http::StatusCode;
use mcp_jsonrpc::Id;
use mcp_streamable_server::{
    Config, PeerAddr, Quota, RateLimit, SessionOwner, StreamableHttpService,
};
use serde_json::json;

use crate::harness::*;

fn from(ip: &str) -> PeerAddr {
    PeerAddr(SocketAddr::new(ip.parse().unwrap(), 40_000))
}

/// Starts a session for a client identified by `tag` (an address or an owner): `initialize`
/// and `notifications/initialized`, two requests' worth of its quota.
async fn open(
    service: &StreamableHttpService,
    tag: impl Fn(http::request::Builder) -> http::request::Builder,
) -> String {
    let response = service
        .handle(request(tag(post(None)), initialize_body(0, "2025-06-18")))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let id = session_id(response.headers()).unwrap();
    sse_events(response, 1).await;
    let initialized = service
        .handle(request(
            tag(post(Some(&id))),
            note("notifications/initialized"),
        ))
        .await;
    assert_eq!(initialized.status(), StatusCode::ACCEPTED);
    id
}

/// POSTs `body` to `session` as the client `tag` identifies.
async fn send(
    service: &StreamableHttpService,
    tag: impl Fn(http::request::Builder) -> http::request::Builder,
    session: &str,
    body: String,
) -> http::Response<mcp_streamable_server::ResponseBody> {
    service
        .handle(request(tag(post(Some(session))), body))
        .await
}

fn echo(id: i64) -> String {
    call(id, "echo", json!({"text": "hi"}))
}

#[tokio::test(start_paused = true)]
async fn s26_a_burst_over_the_limit_gets_429_with_retry_after_and_everyone_else_is_served() {
    let limits = RateLimit::new().requests(Quota::per_minute(6).burst(5));
    let service = service(Config::default().rate_limit(limits));
    let a = |b: http::request::Builder| b.extension(from("192.0.2.1"));
    let b = |b: http::request::Builder| b.extension(from("192.0.2.2"));
    let session_a = open(&service, a).await;
    for id in 1..=3 {
        let response = send(&service, a, &session_a, echo(id)).await;
        assert_eq!(response.status(), StatusCode::OK, "call {id}");
        sse_events(response, 1).await;
    }
    // The sixth request of the burst of five: refused, with how long to wait (one interval).
    let response = send(&service, a, &session_a, echo(4)).await;
    assert_eq!(response.headers()["retry-after"], "10");
    let (code, id, message) = refusal(response, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!((code, id), (-32000, Some(Id::from(4))));
    assert!(message.contains("retry after 10 s"), "{message}");

    // Everyone else is served meanwhile, with a quota of their own.
    let session_b = open(&service, b).await;
    let response = send(&service, b, &session_b, echo(1)).await;
    assert_eq!(response.status(), StatusCode::OK);
    sse_events(response, 1).await;

    // Once the interval passed, one more request of the first client fits, and one only.
    tokio::time::advance(Duration::from_secs(10)).await;
    let response = send(&service, a, &session_a, echo(4)).await;
    assert_eq!(response.status(), StatusCode::OK);
    sse_events(response, 1).await;
    let response = send(&service, a, &session_a, echo(5)).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test(start_paused = true)]
async fn s26_tool_calls_have_a_quota_of_their_own() {
    let limits = RateLimit::new()
        .requests(Quota::per_second(100))
        .method("tools/call", Quota::per_minute(2));
    let service = service(Config::default().rate_limit(limits));
    let a = |b: http::request::Builder| b.extension(from("192.0.2.1"));
    let session = open(&service, a).await;
    for id in 1..=2 {
        let response = send(&service, a, &session, echo(id)).await;
        assert_eq!(response.status(), StatusCode::OK);
        sse_events(response, 1).await;
    }
    let response = send(&service, a, &session, echo(3)).await;
    assert_eq!(response.headers()["retry-after"], "30");
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    // Other methods are served.
    let response = send(&service, a, &session, ping(4)).await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn s26_get_streams_delete_and_answers_to_the_server_are_not_charged() {
    let limits = RateLimit::new().requests(Quota::per_minute(2));
    let service = service(Config::default().rate_limit(limits));
    let a = |b: http::request::Builder| b.extension(from("192.0.2.1"));
    let session = open(&service, a).await;
    // The quota is used up; a request is refused...
    assert_eq!(
        send(&service, a, &session, ping(1)).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    // ...but an answer to the server, the standalone stream and the session's end are not calls.
    let answer = json!({"jsonrpc": "2.0", "id": "s-1", "result": {}}).to_string();
    assert_eq!(
        send(&service, a, &session, answer).await.status(),
        StatusCode::ACCEPTED
    );
    let mut stream = get(&session, None);
    stream.extensions_mut().insert(from("192.0.2.1"));
    assert_eq!(service.handle(stream).await.status(), StatusCode::OK);
    let mut end = delete(&session);
    end.extensions_mut().insert(from("192.0.2.1"));
    assert_eq!(service.handle(end).await.status(), StatusCode::NO_CONTENT);
}

#[tokio::test(start_paused = true)]
async fn s26_owners_behind_one_address_have_quotas_of_their_own() {
    let limits = RateLimit::new().requests(Quota::per_minute(3));
    let service = service(Config::default().rate_limit(limits));
    let alice = |b: http::request::Builder| {
        b.extension(from("192.0.2.9"))
            .extension(SessionOwner::new("alice"))
    };
    let bob = |b: http::request::Builder| {
        b.extension(from("192.0.2.9"))
            .extension(SessionOwner::new("bob"))
    };
    let session_a = open(&service, alice).await;
    let session_b = open(&service, bob).await;
    assert_eq!(
        send(&service, alice, &session_a, ping(1)).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        send(&service, alice, &session_a, ping(2)).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        send(&service, bob, &session_b, ping(1)).await.status(),
        StatusCode::OK
    );
}

#[tokio::test(start_paused = true)]
async fn s26_per_request_posts_are_limited_alike_and_a_refused_one_reaches_no_application() {
    use crate::modern_app::{call_request, logged};

    let limits = RateLimit::new().method("tools/call", Quota::per_minute(2));
    let (service, mut log) = logged(Config::default().rate_limit(limits));
    let from_a = |mut request: http::Request<_>| {
        request.extensions_mut().insert(from("192.0.2.1"));
        request
    };
    for id in 1..=2 {
        let response = service
            .handle(from_a(call_request(id, "echo", json!({}))))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        body_bytes(response).await;
    }
    let response = service
        .handle(from_a(call_request(3, "echo", json!({}))))
        .await;
    assert_eq!(response.headers()["retry-after"], "30");
    let (_, id, _) = refusal(response, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(id, Some(Id::from(3)));
    let mut calls = 0;
    while let Ok(line) = log.try_recv() {
        calls += usize::from(line == "q:tools/call");
    }
    assert_eq!(calls, 2, "the refused call reached an application");
}

#[tokio::test]
async fn s26_a_forwarded_post_is_charged_where_the_client_sent_it_not_again_at_the_holder() {
    let network = mcp_streamable_server::InMemoryNetwork::default();
    let node = |name: &str| {
        let limits = RateLimit::new().requests(Quota::per_minute(3));
        service(
            Config::default()
                .cluster(network.node(name))
                .rate_limit(limits),
        )
    };
    let (a, b) = (node("a"), node("b"));
    // Two requests charged at a, the holder.
    let sid = initialize(&a, "2025-11-25").await;
    // Three through b, each forwarded to a: charged at b.
    for id in 1..=3 {
        let response = b.handle(request(post(Some(&sid)), ping(id))).await;
        assert_eq!(response.status(), StatusCode::OK, "ping {id} through b");
        sse_events(response, 1).await;
    }
    assert_eq!(
        b.handle(request(post(Some(&sid)), ping(4))).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    // a's quota still has room for one: the forwards were not charged there again.
    let response = a.handle(request(post(Some(&sid)), ping(5))).await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[cfg(feature = "auth")]
#[tokio::test(start_paused = true)]
async fn a11_each_principal_has_quotas_of_its_own_whatever_its_address() {
    use mcp_streamable_auth::Principal;

    let limits = RateLimit::new().requests(Quota::per_minute(3));
    let service = service(Config::default().rate_limit(limits));
    let as_user = |subject: &'static str| {
        move |b: http::request::Builder| {
            b.extension(from("192.0.2.9"))
                .extension(Principal::new(subject).with_issuer("https://auth.example.com"))
        }
    };
    let (alice, bob) = (as_user("alice"), as_user("bob"));
    let session_a = open(&service, alice).await;
    let session_b = open(&service, bob).await;
    assert_eq!(
        send(&service, alice, &session_a, ping(1)).await.status(),
        StatusCode::OK
    );
    let refused = send(&service, alice, &session_a, ping(2)).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        send(&service, bob, &session_b, ping(1)).await.status(),
        StatusCode::OK
    );
}
