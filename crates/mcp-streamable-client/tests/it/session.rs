//! C6: an expired session, and starting a new one. C8: closing with DELETE, bounded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Method;
use mcp_jsonrpc::Id;
use mcp_transport::{Connection, ErrorKind, Sender};
use serde_json::json;

use crate::fake::{self, Fake, SESSION};
use crate::*;

#[tokio::test]
async fn c6_404_for_a_known_session_is_session_expired() {
    let server = Fake::start(|req| async move {
        if req.is_post("tools/list") {
            return fake::status(404, "session not found");
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    let err = send(&conn, request(2, "tools/list")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol);
    let cause = cause(&err);
    assert!(cause.is_session_expired(), "{cause:?}");
    assert_eq!(cause.status(), Some(http::StatusCode::NOT_FOUND));
    assert_eq!(cause.body(), Some("session not found"));
    // Without re-initialisation, nothing else was sent.
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn c6_404_without_a_session_is_not_session_expiry() {
    let server = Fake::start(|_| async move { fake::status(404, "no such endpoint") }).await;
    let conn = connect(builder(&server.url).legacy_fallback(false)).await;
    let err = send(&conn, initialize(1)).await.unwrap_err();
    assert!(!cause(&err).is_session_expired());
    assert_eq!(cause(&err).status(), Some(http::StatusCode::NOT_FOUND));
}

#[tokio::test]
async fn c6_reinitialize_on_expiry_starts_a_new_session_and_retries_once() {
    let sessions = Arc::new(AtomicUsize::new(0));
    let server = Fake::start({
        let sessions = sessions.clone();
        move |req| {
            let sessions = sessions.clone();
            async move {
                if req.is_post("initialize") {
                    let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                    let body = fake::init_result(&req.id());
                    return fake::with_session(
                        fake::answer(200, "application/json", body),
                        &format!("s{n}"),
                    );
                }
                if req.method == Method::POST
                    && req.header("mcp-session-id") == Some("s1")
                    && req.id() != json!(null)
                {
                    return fake::status(404, "session expired");
                }
                fake::standard(&req)
            }
        }
    })
    .await;
    let builder = builder(&server.url)
        .standalone_stream(false)
        .reinitialize_on_expiry(true);
    let mut conn = connect(builder).await;
    handshake(&mut conn).await;
    send(&conn, request(5, "tools/list")).await.unwrap();
    let response = recv_response(&mut conn).await;
    assert_eq!(response.id(), Some(&Id::from(5)));
    assert!(!response.is_error());
    // The new session's initialize result is the transport's, not the application's.
    assert_quiet(&mut conn, Duration::from_millis(100)).await;
    assert_eq!(conn.session_id().as_deref(), Some("s2"));

    let log = server.requests();
    let seen: Vec<_> = log
        .iter()
        .map(|r| {
            (
                r.rpc().unwrap(),
                r.header("mcp-session-id").map(str::to_owned),
            )
        })
        .collect();
    let s = |v: &str| Some(v.to_owned());
    assert_eq!(
        seen,
        [
            ("initialize".to_owned(), None),
            ("notifications/initialized".to_owned(), s("s1")),
            ("tools/list".to_owned(), s("s1")),
            ("initialize".to_owned(), None),
            ("notifications/initialized".to_owned(), s("s2")),
            ("tools/list".to_owned(), s("s2")),
        ]
    );
    assert_eq!(log[5].header("mcp-protocol-version"), Some(fake::VERSION));
}

#[tokio::test]
async fn c8_close_sends_delete_with_the_session_id_and_ends_everything() {
    let held = Arc::new(Mutex::new(Vec::new()));
    let server = Fake::start(move |req| {
        let held = held.clone();
        async move {
            if req.is_post("tools/call") {
                // A stream that never ends: close must not wait for it.
                let (tx, response) = fake::sse_channel(1);
                held.lock().unwrap().push(tx);
                return response;
            }
            fake::standard(&req)
        }
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    let sender = conn.sender();
    send(&conn, request(2, "tools/call")).await.unwrap();
    within(conn.close()).await.unwrap();

    let log = server.requests();
    let delete = log
        .iter()
        .find(|r| r.method == Method::DELETE)
        .expect("a DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some(SESSION));
    assert_eq!(within(conn.recv()).await.unwrap(), None);
    assert!(sender.is_closed());
    let err = within(sender.send(request(3, "ping").into()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Closed);
    // Closing twice is harmless and sends nothing more.
    within(conn.close()).await.unwrap();
    assert_eq!(server.count(Method::DELETE), 1);
}

#[tokio::test]
async fn c8_delete_answered_405_is_fine() {
    let server = Fake::start(|req| async move {
        if req.method == Method::DELETE {
            return fake::status(405, "sessions cannot be deleted");
        }
        fake::standard(&req)
    })
    .await;
    let mut conn = connect(builder(&server.url).standalone_stream(false)).await;
    handshake(&mut conn).await;
    within(conn.close()).await.unwrap();
    assert_eq!(server.count(Method::DELETE), 1);
}

#[tokio::test]
async fn c8_a_server_that_never_answers_delete_does_not_hang_close() {
    let server = Fake::start(|req| async move {
        if req.method == Method::DELETE {
            std::future::pending::<()>().await;
        }
        fake::standard(&req)
    })
    .await;
    let builder = builder(&server.url)
        .standalone_stream(false)
        .close_timeout(Duration::from_millis(200));
    let mut conn = connect(builder).await;
    handshake(&mut conn).await;
    let err = within(conn.close()).await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(server.count(Method::DELETE), 1);
    assert_eq!(within(conn.recv()).await.unwrap(), None);
}
