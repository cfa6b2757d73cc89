//! A1-A5: authorization at the edge (feature `auth`), through the service without sockets.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use mcp_streamable_auth::{
    Guard, Principal, TokenError, TokenErrorKind, TokenVerifier, VerifyFuture,
};
use mcp_streamable_server::{Config, SessionOwner, StreamableHttpService, codes};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::harness::*;
use crate::modern_app::call_request;

const RESOURCE: &str = "http://localhost/mcp";
const METADATA_URL: &str = "http://localhost/.well-known/oauth-protected-resource/mcp";

/// Three users: alice and bob with the required scope, carol without it.
struct Users;

impl TokenVerifier for Users {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            let principal = |subject: &str| {
                Principal::new(subject)
                    .with_issuer("https://auth.example.com")
                    .with_client_id("cli")
            };
            match token {
                "alice" | "bob" => Ok(principal(token).with_scopes(["mcp"])),
                "carol" => Ok(principal(token).with_scopes(["other"])),
                _ => Err(TokenError::new(TokenErrorKind::Invalid)),
            }
        })
    }
}

fn guard() -> Guard {
    Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .scopes_supported(["mcp", "other"])
        .required_scopes(["mcp"])
        .build(Users)
        .unwrap()
}

/// A protected service running the tests' app, and how many times its factory ran.
fn protected(config: Config) -> (StreamableHttpService, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&started);
    let service = service_with(config.authorization(guard()), move |conn, parts| {
        count.fetch_add(1, Ordering::SeqCst);
        crate::app::session(conn, parts)
    });
    (service, started)
}

fn bearer(mut request: Request<Full<Bytes>>, token: Option<&str>) -> Request<Full<Bytes>> {
    if let Some(token) = token {
        let value = format!("Bearer {token}").parse().unwrap();
        request.headers_mut().insert("authorization", value);
    }
    request
}

/// Every kind of request a client makes, of both families, without the session id any of
/// them would need past the guard.
fn every_request(session: &str) -> Vec<(&'static str, Request<Full<Bytes>>)> {
    vec![
        (
            "initialize",
            request(post(None), initialize_body(0, "2025-11-25")),
        ),
        ("session POST", request(post(Some(session)), ping(1))),
        ("GET", get(session, None)),
        ("DELETE", delete(session)),
        (
            "per-request POST",
            call_request(1, "echo", json!({"text": "hi"})),
        ),
    ]
}

async fn challenge_of(
    response: http::Response<mcp_streamable_server::ResponseBody>,
    status: StatusCode,
) -> String {
    assert_eq!(response.status(), status);
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.contains(&format!(r#"resource_metadata="{METADATA_URL}""#)),
        "{challenge}"
    );
    challenge
}

/// A1: without a good token, every request of either family, in either mode, is a 401 whose
/// challenge points at the metadata; nothing is registered and the application never runs.
#[tokio::test]
async fn a1_every_request_without_a_good_token_is_401_and_registers_nothing() {
    for config in [Config::default(), Config::default().stateless()] {
        let (service, started) = protected(config);
        for token in [None, Some("mallory"), Some("not a token")] {
            for (what, unsigned) in every_request("0123456789abcdef") {
                let response = service.handle(bearer(unsigned, token)).await;
                let challenge = challenge_of(response, StatusCode::UNAUTHORIZED).await;
                let invalid = challenge.contains(r#"error="invalid_token""#);
                assert_eq!(invalid, token.is_some(), "{what} {token:?}: {challenge}");
                assert_eq!(service.session_count(), 0, "{what} {token:?}");
            }
        }
        // Another scheme is as good as none: the client does not know what is wanted yet.
        let basic = with(post(None), "authorization", "Basic YWxpY2U6c2VjcmV0");
        let response = service
            .handle(request(basic, initialize_body(0, "2025-11-25")))
            .await;
        let challenge = challenge_of(response, StatusCode::UNAUTHORIZED).await;
        assert!(!challenge.contains("error="), "{challenge}");
        assert_eq!(service.session_count(), 0);
        assert_eq!(started.load(Ordering::SeqCst), 0);
    }
}

/// A2: a valid token without the required scope is a 403 `insufficient_scope` naming the
/// scope, before anything is registered.
#[tokio::test]
async fn a2_a_token_without_the_scope_is_403_and_registers_nothing() {
    let (service, started) = protected(Config::default());
    for (what, unsigned) in every_request("0123456789abcdef") {
        let response = service.handle(bearer(unsigned, Some("carol"))).await;
        let challenge = challenge_of(response, StatusCode::FORBIDDEN).await;
        assert!(
            challenge.contains(r#"error="insufficient_scope""#)
                && challenge.contains(r#"scope="mcp""#),
            "{what}: {challenge}"
        );
    }
    assert_eq!(service.session_count(), 0);
    assert_eq!(started.load(Ordering::SeqCst), 0);
}

/// A3: the protected resource metadata, at the path-aware and the root well-known paths,
/// without a token.
#[tokio::test]
async fn a3_the_metadata_is_served_at_its_paths_without_a_token() {
    let (service, _) = protected(Config::default());
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let asked = Request::get(format!("http://localhost{path}"))
            .header("host", "localhost")
            .body(Full::<Bytes>::default())
            .unwrap();
        let response = service.handle(asked).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], "application/json");
        let document: Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
        assert_eq!(document["resource"], RESOURCE);
        assert_eq!(
            document["authorization_servers"],
            json!(["https://auth.example.com"])
        );
    }
    // Any other path is the endpoint's, and guarded.
    let other = Request::get("http://localhost/.well-known/oauth-protected-resource/other")
        .header("host", "localhost")
        .body(Full::<Bytes>::default())
        .unwrap();
    let response = service.handle(other).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

/// A4: a session belongs to the principal that started it: another user's good token finds
/// nothing (404, never 401, so the client starts over instead of refreshing a good token), and
/// so does a good token naming a session that does not exist.
#[tokio::test]
async fn a4_a_session_is_unknown_to_another_principal_and_never_a_401() {
    let (service, _) = protected(Config::default());
    let init = bearer(
        request(post(None), initialize_body(0, "2025-11-25")),
        Some("alice"),
    );
    let response = service.handle(init).await;
    let sid = session_id(response.headers()).expect("a session for alice");
    let _ = sse_events(response, 10).await;
    assert_eq!(service.session_count(), 1);
    for (sid, token) in [(sid.as_str(), "bob"), ("0123456789abcdef", "alice")] {
        let posted = bearer(request(post(Some(sid)), ping(1)), Some(token));
        let (code, _, _) = refusal(service.handle(posted).await, StatusCode::NOT_FOUND).await;
        assert_eq!(code, codes::SESSION_NOT_FOUND, "{token}");
        let got = service.handle(bearer(get(sid, None), Some(token))).await;
        assert_eq!(got.status(), StatusCode::NOT_FOUND, "{token}");
        let deleted = service.handle(bearer(delete(sid), Some(token))).await;
        assert_eq!(deleted.status(), StatusCode::NOT_FOUND, "{token}");
    }
    let posted = bearer(request(post(Some(&sid)), ping(2)), Some("alice"));
    let answer = messages(&sse_events(service.handle(posted).await, 10).await);
    assert_eq!(label(&answer[0]), "r2");
    let deleted = service.handle(bearer(delete(&sid), Some("alice"))).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
}

/// A4: a principal a layer in front put in the extensions (`RequireBearer`, without
/// `Config::authorization`) binds the session the same way, and a `SessionOwner` already
/// there takes precedence over it.
#[tokio::test]
async fn a4_a_principal_from_a_layer_binds_and_a_session_owner_wins() {
    let service = service(Config::default());
    let as_user = |mut r: Request<Full<Bytes>>, subject: &str, owner: Option<&str>| {
        r.extensions_mut().insert(Principal::new(subject));
        if let Some(owner) = owner {
            r.extensions_mut().insert(SessionOwner::new(owner));
        }
        r
    };
    let init = request(post(None), initialize_body(0, "2025-11-25"));
    let response = service.handle(as_user(init, "alice", None)).await;
    let by_principal = session_id(response.headers()).expect("a session");
    let _ = sse_events(response, 10).await;
    let init = request(post(None), initialize_body(0, "2025-11-25"));
    let response = service.handle(as_user(init, "alice", Some("team"))).await;
    let by_owner = session_id(response.headers()).expect("a session");
    let _ = sse_events(response, 10).await;

    let cases = [
        (&by_principal, "bob", None, StatusCode::NOT_FOUND),
        (&by_principal, "alice", None, StatusCode::OK),
        // The owner, not the principal, is who the session belongs to.
        (&by_owner, "alice", None, StatusCode::NOT_FOUND),
        (&by_owner, "bob", Some("team"), StatusCode::OK),
    ];
    for (i, (sid, subject, owner, status)) in cases.into_iter().enumerate() {
        let posted = request(post(Some(sid)), ping(i as i64));
        let response = service.handle(as_user(posted, subject, owner)).await;
        assert_eq!(response.status(), status, "case {i}");
    }
}

/// A5: the factory gets the parts of the request that started the connection, with the
/// principal in their extensions: `initialize`, a stateless POST, a per-request POST.
#[tokio::test]
async fn a5_the_factory_sees_the_principal_of_the_request_that_started_it() {
    for config in [Config::default(), Config::default().stateless()] {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let factory = move |conn, parts: http::request::Parts| {
            let principal = parts.extensions.get::<Principal>().cloned();
            let _ = tx.send(principal.map(|p| (p.subject, p.scopes)));
            crate::app::session(conn, parts)
        };
        let service = service_with(config.authorization(guard()), factory);
        let started = [
            bearer(
                request(post(None), initialize_body(0, "2025-11-25")),
                Some("alice"),
            ),
            bearer(call_request(1, "echo", json!({"text": "hi"})), Some("bob")),
        ];
        for (started, subject) in started.into_iter().zip(["alice", "bob"]) {
            let response = service.handle(started).await;
            assert_eq!(response.status(), StatusCode::OK, "{subject}");
            let seen = tokio::time::timeout(WAIT, rx.recv())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(seen, Some((subject.to_owned(), vec!["mcp".to_owned()])));
        }
    }
}

/// H4: the request log has a line for a request the guard refused too, with its status.
#[tokio::test(flavor = "current_thread")]
async fn a_refused_token_has_its_line_in_the_request_log() {
    let (service, _) = protected(Config::default());
    let (logs, _guard) = crate::logs::capture();
    let refused = bearer(
        request(post(None), initialize_body(0, "2025-11-25")),
        Some("mallory"),
    );
    assert_eq!(
        service.handle(refused).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert!(
        logs.has(
            tracing::Level::DEBUG,
            &["request answered", "status=401", "not authorized"]
        ),
        "{}",
        logs.dump()
    );
}
