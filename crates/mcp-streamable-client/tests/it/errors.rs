//! C7: failed answers carry their status and body; oversized events are bounded errors.
//! C9: headers and an authorization provider that refreshes its token.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderValue, Method};
use mcp_jsonrpc::Id;
use mcp_streamable_client::{AuthContext, BoxError, ERROR_BODY_PREFIX, LOST_RESPONSE_CODE};
use mcp_transport::ErrorKind;
use tokio::sync::oneshot;

use crate::fake::{self, Fake};
use crate::*;

#[tokio::test]
async fn c7_error_statuses_carry_the_status_and_the_start_of_the_body() {
    for (code, body) in [(401, "invalid token"), (500, "boom"), (503, "overloaded")] {
        let server = Fake::start(move |_| async move { fake::status(code, body) }).await;
        let conn = connect(builder(&server.url)).await;
        let err = send(&conn, initialize(1)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol);
        let cause = cause(&err);
        assert_eq!(cause.status().map(|s| s.as_u16()), Some(code));
        assert_eq!(cause.body(), Some(body));
        assert!(cause.to_string().contains(&code.to_string()), "{cause}");
        assert!(cause.to_string().contains(body), "{cause}");
    }
    // Cut in the middle of a character: the partial one is dropped.
    let long = format!("a{}", "é".repeat(3 * ERROR_BODY_PREFIX));
    let server = Fake::start(move |_| {
        let long = long.clone();
        async move { fake::status(500, &long) }
    })
    .await;
    let conn = connect(builder(&server.url)).await;
    let err = send(&conn, initialize(1)).await.unwrap_err();
    let body = cause(&err).body().unwrap();
    assert!(body.len() <= ERROR_BODY_PREFIX && body.len() > ERROR_BODY_PREFIX - 4);
    assert!(body.starts_with('a') && body[1..].chars().all(|c| c == 'é'));
}

/// The resident memory of this process, in bytes (Linux).
fn resident() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[tokio::test]
async fn c7_an_oversized_event_is_an_error_and_its_request_is_answered() {
    const LIMIT: usize = 64 * 1024;
    const EVENT: usize = 32 * 1024 * 1024;
    let (sent_tx, sent_rx) = oneshot::channel::<usize>();
    let sent_tx = Arc::new(Mutex::new(Some(sent_tx)));
    let server = Fake::start(move |req| {
        let sent_tx = sent_tx.clone();
        async move {
            if !req.is_post("tools/call") {
                return fake::standard(&req);
            }
            let (tx, response) = fake::sse_channel(2);
            tokio::spawn(async move {
                let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
                let mut sent = 0;
                if tx
                    .send(Bytes::from_static(b"id: big\ndata: "))
                    .await
                    .is_ok()
                {
                    while sent < EVENT && tx.send(chunk.clone()).await.is_ok() {
                        sent += chunk.len();
                    }
                }
                let _ = sent_tx.lock().unwrap().take().unwrap().send(sent);
            });
            response
        }
    })
    .await;
    let mut conn = connect(
        builder(&server.url)
            .standalone_stream(false)
            .max_event_size(LIMIT),
    )
    .await;
    handshake(&mut conn).await;
    let before = resident();
    send(&conn, request(2, "tools/call")).await.unwrap();

    let err = within(conn.recv()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MessageTooLarge);
    assert!(err.is_recoverable());
    assert!(cause(&err).is_event_too_large());
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(2)));
    assert_eq!(response.result().unwrap_err().code, LOST_RESPONSE_CODE);

    // The client stopped reading long before the end of the event...
    let sent = within(sent_rx).await.unwrap();
    assert!(sent < EVENT, "the client read all {sent} bytes");
    // ...and did not buffer it.
    if let (Some(before), Some(after)) = (before, resident()) {
        assert!(
            after.saturating_sub(before) < EVENT / 2,
            "grew by {}",
            after - before
        );
    }
    // The connection goes on.
    send(&conn, request(3, "ping")).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(3)));
}

#[tokio::test]
async fn c9_the_auth_provider_is_asked_before_each_request_and_refreshes_after_401() {
    let server = Fake::start(|req| async move {
        if req.header("authorization") != Some("Bearer fresh") {
            let mut response = fake::status(401, "token expired");
            response.headers_mut().insert(
                "www-authenticate",
                HeaderValue::from_static("Bearer error=\"invalid_token\""),
            );
            return response;
        }
        fake::standard(&req)
    })
    .await;
    let refreshed = Arc::new(AtomicBool::new(false));
    let contexts = Arc::new(Mutex::new(Vec::<AuthContext>::new()));
    let provider = {
        let refreshed = refreshed.clone();
        let contexts = contexts.clone();
        move |ctx: AuthContext| {
            let refreshed = refreshed.clone();
            contexts.lock().unwrap().push(ctx.clone());
            async move {
                if ctx.is_retry() {
                    refreshed.store(true, Ordering::SeqCst);
                }
                let token = if refreshed.load(Ordering::SeqCst) {
                    "fresh"
                } else {
                    "stale"
                };
                Ok::<_, BoxError>(Some(HeaderValue::from_str(&format!("Bearer {token}"))?))
            }
        }
    };
    let mut conn = connect(builder(&server.url).auth(provider)).await;
    handshake(&mut conn).await;
    server
        .wait_for(|log| log.iter().any(|r| r.method == Method::GET))
        .await;
    within(conn.close()).await.unwrap();

    let log = server.requests();
    let auth: Vec<_> = log
        .iter()
        .map(|r| r.header("authorization").unwrap())
        .collect();
    assert_eq!(auth[0], "Bearer stale");
    assert!(auth[1..].iter().all(|a| *a == "Bearer fresh"), "{auth:?}");
    // POST initialize twice, POST initialized, GET, DELETE: the provider was asked before each
    // (the second initialize's value being the answer to the retry).
    assert_eq!(log.len(), 5, "{log:#?}");
    let contexts = contexts.lock().unwrap();
    assert_eq!(contexts.len(), 5);
    let retries: Vec<_> = contexts.iter().filter(|c| c.is_retry()).collect();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].refused.as_ref().unwrap(), "Bearer stale");
    assert_eq!(
        retries[0].challenge.as_ref().unwrap(),
        "Bearer error=\"invalid_token\""
    );
}

#[tokio::test]
async fn c9_a_second_401_surfaces_with_status_and_body() {
    let server = Fake::start(|_| async move { fake::status(401, "nope") }).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let provider = {
        let calls = calls.clone();
        move |_: AuthContext| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, BoxError>(Some(HeaderValue::from_str(&format!("Bearer t{n}"))?)) }
        }
    };
    let conn = connect(builder(&server.url).auth(provider)).await;
    let err = send(&conn, initialize(1)).await.unwrap_err();
    assert_eq!(cause(&err).status().map(|s| s.as_u16()), Some(401));
    assert_eq!(cause(&err).body(), Some("nope"));
    assert_eq!(server.count(Method::POST), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn c9_a_401_to_a_request_without_authorization_is_still_a_retry() {
    // An OAuth provider has no token before the server's first 401 names its authorization
    // server; that 401 must reach it as a retry even though nothing was refused.
    let server = Fake::start(|req| async move {
        if req.header("authorization") == Some("Bearer granted") {
            return fake::standard(&req);
        }
        fake::status(401, "who are you")
    })
    .await;
    let contexts = Arc::new(Mutex::new(Vec::<AuthContext>::new()));
    let provider = {
        let contexts = contexts.clone();
        move |ctx: AuthContext| {
            contexts.lock().unwrap().push(ctx.clone());
            async move {
                Ok::<_, BoxError>(
                    ctx.is_retry()
                        .then(|| HeaderValue::from_static("Bearer granted")),
                )
            }
        }
    };
    let conn = connect(builder(&server.url).auth(provider)).await;
    send(&conn, initialize(1)).await.unwrap();
    let contexts = contexts.lock().unwrap();
    assert!(!contexts[0].is_retry());
    assert!(contexts[1].is_retry());
    assert_eq!(contexts[1].refused, None);
    assert_eq!(contexts[1].status.map(|s| s.as_u16()), Some(401));
}

#[tokio::test]
async fn c9_one_request_may_be_refused_with_401_then_stepped_up_after_403() {
    let server = Fake::start(|req| async move {
        let (status, challenge) = match req.header("authorization") {
            Some("Bearer t2") => return fake::standard(&req),
            Some("Bearer t1") => (403, "Bearer error=\"insufficient_scope\", scope=\"more\""),
            _ => (401, "Bearer"),
        };
        let mut response = fake::status(status, "refused");
        response
            .headers_mut()
            .insert("www-authenticate", HeaderValue::from_static(challenge));
        response
    })
    .await;
    let calls = Arc::new(AtomicUsize::new(0));
    let provider = {
        let calls = calls.clone();
        move |ctx: AuthContext| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            let token = ctx.is_retry().then(|| format!("Bearer t{n}"));
            async move { Ok::<_, BoxError>(token.map(|t| HeaderValue::from_str(&t).unwrap())) }
        }
    };
    let conn = connect(builder(&server.url).auth(provider)).await;
    send(&conn, initialize(1)).await.unwrap();
    // No token, 401; t1, 403 insufficient_scope; t2, accepted.
    let auth: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        auth[..3],
        [None, Some("Bearer t1".into()), Some("Bearer t2".into())]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn c9_a_403_insufficient_scope_is_a_step_up_and_another_403_is_not() {
    let server = Fake::start(|req| async move {
        let challenge = match req.header("authorization") {
            Some("Bearer wide") => return fake::standard(&req),
            Some("Bearer narrow") => "Bearer error=\"insufficient_scope\", scope=\"write\"",
            _ => "Bearer error=\"invalid_token\"",
        };
        let mut response = fake::status(403, "forbidden");
        response
            .headers_mut()
            .insert("www-authenticate", HeaderValue::from_static(challenge));
        response
    })
    .await;
    let contexts = Arc::new(Mutex::new(Vec::<AuthContext>::new()));
    let provider = |first: &'static str, contexts: Arc<Mutex<Vec<AuthContext>>>| {
        move |ctx: AuthContext| {
            contexts.lock().unwrap().push(ctx.clone());
            let token = if ctx.is_retry() { "wide" } else { first };
            async move { Ok::<_, BoxError>(Some(HeaderValue::from_str(&format!("Bearer {token}"))?)) }
        }
    };
    let conn = connect(builder(&server.url).auth(provider("narrow", contexts.clone()))).await;
    send(&conn, initialize(1)).await.unwrap();
    let retries: Vec<_> = contexts
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.is_retry())
        .cloned()
        .collect();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].refused.as_ref().unwrap(), "Bearer narrow");
    assert!(
        retries[0]
            .challenge
            .as_ref()
            .unwrap()
            .to_str()
            .unwrap()
            .contains("insufficient_scope")
    );

    // A 403 for another reason is not retried: a new token would not change the answer.
    let others = Arc::new(Mutex::new(Vec::<AuthContext>::new()));
    let conn = connect(builder(&server.url).auth(provider("other", others.clone()))).await;
    let err = send(&conn, initialize(1)).await.unwrap_err();
    assert_eq!(cause(&err).status().map(|s| s.as_u16()), Some(403));
    assert_eq!(others.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn c9_headers_go_on_every_request() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let builder = builder(&server.url)
        .header("x-tenant", "blue")
        .header("authorization", "Bearer static");
    let mut conn = connect(builder).await;
    handshake(&mut conn).await;
    server
        .wait_for(|log| log.iter().any(|r| r.method == Method::GET))
        .await;
    within(conn.close()).await.unwrap();
    let log = server.requests();
    assert_eq!(log.len(), 4);
    for req in &log {
        assert_eq!(req.header("x-tenant"), Some("blue"), "{req:?}");
        assert_eq!(
            req.header("authorization"),
            Some("Bearer static"),
            "{req:?}"
        );
    }
}

#[tokio::test]
async fn c9_an_invalid_header_fails_the_build() {
    let err = Client::builder("http://127.0.0.1:1/mcp")
        .header("bad header", "x")
        .build()
        .unwrap_err();
    assert!(err.is_builder());
    assert!(Client::new("ftp://127.0.0.1/mcp").unwrap_err().is_builder());
}
