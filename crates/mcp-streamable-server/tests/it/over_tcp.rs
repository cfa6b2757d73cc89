//! Over loopback TCP: a bare hyper server (HTTP/1 and HTTP/2), an axum router, S17's checks
//! on the wire, and resumption after really cut connections.

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_streamable_server::{AllowList, Config, InMemoryEventStore};
use serde_json::json;
use tokio::net::TcpListener;

use crate::harness::{self, call, initialize_body, label, message, result_of};
use crate::tcp::{self, Sse};

/// Initializes over `client`; returns the session id.
async fn initialize(client: &tcp::HttpClient, uri: &str, version: &str) -> String {
    let response = client
        .request(tcp::post(uri, None, initialize_body(0, version)))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let sid = harness::session_id(response.headers()).unwrap();
    let mut sse = Sse::new(response);
    assert!(sse.next().await.is_some());
    assert!(sse.next().await.is_none());
    sid
}

async fn echo(client: &tcp::HttpClient, uri: &str, sid: &str, id: i64, text: &str) -> String {
    let response = client
        .request(tcp::post(
            uri,
            Some(sid),
            call(id, "echo", json!({"text": text})),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut sse = Sse::new(response);
    let m = message(&sse.next().await.unwrap());
    assert_eq!(harness::response_id(&m), Some(mcp_jsonrpc::Id::from(id)));
    result_of(&m)["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_service_under_a_bare_hyper_server() {
    let service = harness::service(Config::default());
    let server = tcp::serve(service.clone()).await;
    let client = tcp::client();
    let uri = server.uri();
    let sid = initialize(&client, &uri, "2025-06-18").await;
    let response = client.request(tcp::get(&uri, &sid, None)).await.unwrap();
    let mut standalone = Sse::new(response);
    assert_eq!(echo(&client, &uri, &sid, 1, "over tcp").await, "over tcp");
    let response = client
        .request(tcp::post(
            &uri,
            Some(&sid),
            call(2, "broadcast", json!({"text": "b"})),
        ))
        .await
        .unwrap();
    tcp::body_bytes(response).await;
    let event = standalone.next().await.unwrap();
    assert_eq!(label(&message(&event)), "n:notifications/message");
    let response = client.request(tcp::delete(&uri, &sid)).await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(
        standalone.next().await.is_none(),
        "DELETE ends the GET stream"
    );
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn the_service_in_an_axum_router() {
    let service = harness::service(Config::default());
    let router = axum::Router::new().route_service("/mcp", service.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let client = tcp::client();
    let uri = format!("http://{addr}/mcp");
    let sid = initialize(&client, &uri, "2025-06-18").await;
    assert_eq!(echo(&client, &uri, &sid, 1, "from axum").await, "from axum");
    let response = client
        .request(tcp::post(
            &format!("http://{addr}/elsewhere"),
            Some(&sid),
            harness::ping(2),
        ))
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::NOT_FOUND,
        "axum routes the rest"
    );
    assert_eq!(service.session_count(), 1);
    server.abort();
}

#[tokio::test]
async fn s17_http2_takes_the_host_from_the_authority() {
    let service = harness::service(Config::default());
    let server = tcp::serve(service).await;
    let tcp_stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp_stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let h2 = |authority: &str, body: String| {
        Request::post(format!("http://{authority}/mcp"))
            .header("accept", harness::ACCEPT_BOTH)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    let response = sender
        .send_request(h2(
            &server.addr.to_string(),
            initialize_body(0, "2025-06-18"),
        ))
        .await
        .unwrap();
    assert_eq!(response.version(), http::Version::HTTP_2);
    assert_eq!(response.status(), StatusCode::OK);
    let mut sse = Sse::new(response);
    assert!(sse.next().await.is_some());
    let evil = format!("evil.example:{}", server.addr.port());
    let response = sender
        .send_request(h2(&evil, initialize_body(0, "2025-06-18")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn s17_origin_and_host_are_checked_on_the_wire_and_configurable() {
    let strict = tcp::serve(harness::service(Config::default())).await;
    let open = tcp::serve(harness::service(
        Config::default()
            .allowed_hosts(AllowList::Any)
            .allowed_origins(AllowList::List(vec!["https://app.example".into()])),
    ))
    .await;
    let client = tcp::client();
    let init = || initialize_body(0, "2025-06-18");
    let cases = [
        (&strict, None, None, StatusCode::OK),
        (&strict, Some("evil.example"), None, StatusCode::FORBIDDEN),
        (
            &strict,
            None,
            Some("https://evil.example"),
            StatusCode::FORBIDDEN,
        ),
        (&strict, None, Some("http://localhost:3000"), StatusCode::OK),
        (&strict, None, Some("null"), StatusCode::FORBIDDEN),
        (&open, Some("evil.example"), None, StatusCode::OK),
        (&open, None, Some("https://app.example"), StatusCode::OK),
        (
            &open,
            None,
            Some("http://localhost:3000"),
            StatusCode::FORBIDDEN,
        ),
    ];
    for (server, host, origin, status) in cases {
        let mut req = tcp::post(&server.uri(), None, init());
        if let Some(host) = host {
            req.headers_mut().insert("host", host.parse().unwrap());
        }
        if let Some(origin) = origin {
            req.headers_mut().insert("origin", origin.parse().unwrap());
        }
        let response = client.request(req).await.unwrap();
        assert_eq!(response.status(), status, "{host:?} {origin:?}");
        tcp::body_bytes(response).await;
    }
}

#[tokio::test]
async fn s11_resume_after_a_cut_connection_at_every_point_over_tcp() {
    const STEPS: u64 = 20;
    let service = harness::service(Config::default().event_store(InMemoryEventStore::default()));
    let server = tcp::serve(service).await;
    let client = tcp::client();
    let uri = server.uri();
    let sid = initialize(&client, &uri, "2025-11-25").await;
    for k in 0..=STEPS as usize + 1 {
        let id = 100 + k as i64;
        let response = client
            .request(tcp::post(
                &uri,
                Some(&sid),
                call(id, "progress", json!({"steps": STEPS, "delay_ms": 1})),
            ))
            .await
            .unwrap();
        let mut sse = Sse::new(response);
        let mut got = Vec::new();
        let first = sse.next().await.unwrap();
        let stream = first
            .id
            .as_deref()
            .unwrap()
            .split('_')
            .next()
            .unwrap()
            .to_owned();
        // k = 0 cuts after the priming event: its id is `<stream>_0`.
        let mut last = format!("{stream}_0");
        if k > 0 {
            got.push(label(&message(&first)));
            for _ in 1..k {
                got.push(label(&message(&sse.next().await.unwrap())));
            }
            last = sse.last_event_id().to_owned();
        }
        // Cut: the client drops the connection in the middle of the body.
        drop(sse);
        let response = client
            .request(tcp::get(&uri, &sid, Some(&last)))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "k={k}");
        let mut resumed = Sse::new(response);
        let mut n = 0;
        while let Some(event) = resumed.next().await {
            got.push(label(&message(&event)));
            n += 1;
            assert!(n <= STEPS + 1);
        }
        let want: Vec<String> = (1..=STEPS)
            .map(|p| format!("p{p}"))
            .chain([format!("r{id}")])
            .collect();
        assert_eq!(got, want, "cut after {k} events");
    }
}

/// Calls the `flood` tool: `count` notifications on the standalone stream; reads its answer.
async fn flood(client: &tcp::HttpClient, uri: &str, sid: &str, id: i64, count: u64) {
    let call = call(id, "flood", json!({"count": count, "bytes": 0}));
    let response = client
        .request(tcp::post(uri, Some(sid), call))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut sse = Sse::new(response);
    while sse.next().await.is_some() {}
}

/// A GET resuming after `last`: answered 200, its stream.
async fn resume(client: &tcp::HttpClient, uri: &str, sid: &str, last: &str) -> Sse {
    let response = client
        .request(tcp::get(uri, sid, Some(last)))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "resuming {last}");
    Sse::new(response)
}

/// A GET resuming after `last`: refused with 400; the body, which says why.
async fn refused(client: &tcp::HttpClient, uri: &str, sid: &str, last: &str) -> String {
    let response = client
        .request(tcp::get(uri, sid, Some(last)))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    String::from_utf8_lossy(&tcp::body_bytes(response).await).into_owned()
}

/// The `i` a `flood` notification carries.
fn flood_index(event: &mcp_sse::Event) -> u64 {
    harness::params_of(&message(event))["i"].as_u64().unwrap()
}

#[tokio::test]
async fn s11_a_standalone_stream_cut_before_and_after_a_message_resumes_over_tcp() {
    let service = harness::service(Config::default().event_store(InMemoryEventStore::default()));
    let server = tcp::serve(service).await;
    let client = tcp::client();
    let uri = server.uri();
    let sid = initialize(&client, &uri, "2025-11-25").await;
    // Cut right after the priming event, before any message was sent on the stream: its id
    // resumes the stream, it is not "purged".
    let response = client.request(tcp::get(&uri, &sid, None)).await.unwrap();
    let mut get = Sse::new(response);
    let priming = get.until_id().await;
    drop(get);
    flood(&client, &uri, &sid, 1, 1).await;
    let mut get = resume(&client, &uri, &sid, &priming).await;
    assert_eq!(flood_index(&get.next().await.unwrap()), 0);
    // Cut after that message, with nothing stored after it: resumes live from there, and the
    // next message comes exactly once.
    let last = get.last_event_id().to_owned();
    drop(get);
    let mut get = resume(&client, &uri, &sid, &last).await;
    flood(&client, &uri, &sid, 2, 1).await;
    assert_eq!(flood_index(&get.next().await.unwrap()), 0);
    let next = get.last_event_id().to_owned();
    assert_ne!(next, last);
}

#[tokio::test]
async fn s11_without_a_store_cut_streams_carry_no_id_and_a_resumption_is_refused_over_tcp() {
    let service = harness::service(Config::default());
    let server = tcp::serve(service).await;
    let client = tcp::client();
    let uri = server.uri();
    let sid = initialize(&client, &uri, "2025-11-25").await;
    let response = client.request(tcp::get(&uri, &sid, None)).await.unwrap();
    let mut get = Sse::new(response);
    flood(&client, &uri, &sid, 1, 1).await;
    let event = get.next().await.unwrap();
    assert_eq!(flood_index(&event), 0);
    // Without a store no event carries an id: there is nothing to resume from.
    assert!(event.id.is_none());
    drop(get);
    // Sent while no GET reads: kept for the next one (S10, within S22's bound).
    flood(&client, &uri, &sid, 2, 1).await;
    // A Last-Event-ID is refused, saying why: visible, not an empty stream.
    let body = refused(&client, &uri, &sid, "0_1").await;
    assert!(body.contains("keeps no events"), "{body}");
    // A fresh GET gets what was kept.
    let response = client.request(tcp::get(&uri, &sid, None)).await.unwrap();
    let mut get = Sse::new(response);
    assert_eq!(flood_index(&get.next().await.unwrap()), 0);
    // A POST stream cut mid-way carries no id either; a client that tries one is told why.
    let call = call(9, "progress", json!({"steps": 5, "delay_ms": 1}));
    let response = client
        .request(tcp::post(&uri, Some(&sid), call))
        .await
        .unwrap();
    let mut post = Sse::new(response);
    let first = post.next().await.unwrap();
    assert!(first.id.is_none());
    drop(post);
    let body = refused(&client, &uri, &sid, "1_1").await;
    assert!(body.contains("keeps no events"), "{body}");
}
