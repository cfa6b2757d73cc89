//! S18: the session caps, per client and in all. One client's flood of `initialize` empties
//! its own idle sessions, not everyone else's.

use std::net::SocketAddr;

use http::StatusCode;
use mcp_streamable_server::{Config, PeerAddr, SessionOwner, StreamableHttpService};
use serde_json::{Value, json};

use crate::harness::*;

fn from(ip: &str) -> PeerAddr {
    PeerAddr(SocketAddr::new(ip.parse().unwrap(), 40_000))
}

/// Starts a session from `peer`: its id, or the refusal's status and message.
async fn initialize_from(
    service: &StreamableHttpService,
    peer: PeerAddr,
) -> Result<String, (StatusCode, String)> {
    let response = service
        .handle(request(
            post(None).extension(peer),
            initialize_body(0, "2025-06-18"),
        ))
        .await;
    if response.status() != StatusCode::OK {
        let status = response.status();
        let body: Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
        return Err((
            status,
            body["error"]["message"].as_str().unwrap().to_owned(),
        ));
    }
    let id = session_id(response.headers()).unwrap();
    sse_events(response, 1).await;
    Ok(id)
}

/// Whether the session still answers.
async fn alive(service: &StreamableHttpService, sid: &str) -> bool {
    let response = service.handle(request(post(Some(sid)), ping(1))).await;
    response.status() == StatusCode::OK
}

#[tokio::test]
async fn s18_a_flood_of_initialize_from_one_client_evicts_its_own_sessions() {
    let service = service(Config::default().max_sessions(20));
    let mut others = Vec::new();
    for _ in 0..10 {
        others.push(initialize_from(&service, from("192.0.2.2")).await.unwrap());
    }
    // 50 sessions from one address, with the cap at 20: it gives way to itself.
    for _ in 0..50 {
        initialize_from(&service, from("192.0.2.1")).await.unwrap();
    }
    assert_eq!(service.session_count(), 20);
    for sid in &others {
        assert!(
            alive(&service, sid).await,
            "another client's session was evicted"
        );
    }
}

#[tokio::test]
async fn s18_at_its_own_cap_a_client_evicts_its_idle_session_or_is_refused() {
    let service = service(Config::default().max_sessions_per_client(3));
    let first = initialize_from(&service, from("192.0.2.1")).await.unwrap();
    let mut busy = Vec::new();
    for _ in 0..2 {
        let sid = initialize_from(&service, from("192.0.2.1")).await.unwrap();
        busy.push(Sse::new(service.handle(get(&sid, None)).await));
    }
    // The fourth evicts the only idle one of the three: the first.
    let fourth = initialize_from(&service, from("192.0.2.1")).await.unwrap();
    assert!(!alive(&service, &first).await);
    busy.push(Sse::new(service.handle(get(&fourth, None)).await));
    // Now none of its three is idle: refused, saying why; another client is still served.
    let (status, message) = initialize_from(&service, from("192.0.2.1"))
        .await
        .unwrap_err();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        message.contains("this client holds 3 sessions"),
        "{message}"
    );
    let other = initialize_from(&service, from("192.0.2.9")).await.unwrap();
    assert!(alive(&service, &other).await);
}

#[tokio::test(start_paused = true)]
async fn s18_an_owner_is_one_client_whatever_its_addresses() {
    let service = service(Config::default().max_sessions_per_client(2));
    let alice = SessionOwner::new("alice");
    let mut sessions = Vec::new();
    for ip in ["192.0.2.1", "192.0.2.2", "192.0.2.3"] {
        let response = service
            .handle(request(
                post(None).extension(from(ip)).extension(alice.clone()),
                initialize_body(0, "2025-06-18"),
            ))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        sessions.push(session_id(response.headers()).unwrap());
        sse_events(response, 1).await;
        // Each session a millisecond older than the next: the least recently used is clear.
        tokio::time::advance(std::time::Duration::from_millis(1)).await;
    }
    // Her third session, from a third address, evicted her first.
    assert_eq!(service.session_count(), 2);
    let ping_as_alice = |sid: &str| {
        request(
            post(Some(sid)).extension(alice.clone()),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string(),
        )
    };
    assert_eq!(
        service.handle(ping_as_alice(&sessions[0])).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        service.handle(ping_as_alice(&sessions[2])).await.status(),
        StatusCode::OK
    );
}

/// `serve` tells clients apart by their connection's address: three sessions from loopback
/// with a cap of two per client leave two, the first evicted.
#[cfg(feature = "serve")]
#[tokio::test]
async fn s18_serve_puts_the_peer_address_in_each_request() {
    let service = service(Config::default().max_sessions_per_client(2));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(mcp_streamable_server::serve::Options::default().serve(
        listener,
        service.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    let client = crate::tcp::client();
    for _ in 0..3 {
        let response = client
            .request(crate::tcp::post(
                &uri,
                None,
                initialize_body(0, "2025-06-18"),
            ))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        crate::tcp::body_bytes(response).await;
    }
    assert_eq!(service.session_count(), 2);
    let _ = stop.send(());
    tokio::time::timeout(WAIT, served).await.unwrap().unwrap();
}
