use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use http::StatusCode;
use http_body_util::BodyExt;
use tower::{Layer as _, ServiceExt, service_fn, util::BoxCloneService};

use super::*;
use crate::{
    error::TokenError, error::TokenErrorKind, principal::Principal, verifier::TokenVerifier,
    verifier::VerifyFuture,
};

struct Fixed;

impl TokenVerifier for Fixed {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            match token {
                "good" => Ok(Principal::new("alice")
                    .with_client_id("cli")
                    .with_scopes(["mcp"])),
                "narrow" => Ok(Principal::new("bob")),
                _ => Err(TokenError::new(TokenErrorKind::Invalid)),
            }
        })
    }
}

type Inner = BoxCloneService<Request<Full<Bytes>>, Response<Full<Bytes>>, Infallible>;

/// The guarded service: answers with the principal's subject, or `-` without one; counts calls.
fn service(calls: Arc<AtomicUsize>) -> RequireBearer<Inner> {
    let guard = Guard::builder("https://mcp.example.com/mcp")
        .authorization_server("https://auth.example.com")
        .required_scopes(["mcp"])
        .build(Fixed)
        .unwrap();
    let inner = service_fn(move |request: Request<Full<Bytes>>| {
        calls.fetch_add(1, Ordering::Relaxed);
        async move {
            let subject = request
                .extensions()
                .get::<Principal>()
                .map_or("-".to_owned(), |p| p.subject.clone());
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(subject))))
        }
    });
    guard.layer().layer(BoxCloneService::new(inner))
}

async fn send(
    service: &RequireBearer<Inner>,
    request: http::request::Builder,
) -> (Response<()>, Bytes) {
    let response = service
        .clone()
        .oneshot(request.body(Full::default()).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (Response::from_parts(parts, ()), bytes)
}

#[tokio::test]
async fn a_good_token_reaches_the_inner_service_with_its_principal() {
    let calls = Arc::new(AtomicUsize::new(0));
    let service = service(calls.clone());
    let (response, body) = send(
        &service,
        Request::post("/mcp").header("authorization", "Bearer good"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body, "alice");
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn refusals_are_answered_before_the_inner_service() {
    let calls = Arc::new(AtomicUsize::new(0));
    let service = service(calls.clone());
    let challenge = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp""#;
    let rows = [
        (None, 401, challenge.to_owned()),
        (
            Some("Bearer bad"),
            401,
            format!(
                r#"{challenge}, error="invalid_token", error_description="the access token is invalid""#
            ),
        ),
        (
            Some("Bearer narrow"),
            403,
            format!(
                r#"{challenge}, error="insufficient_scope", error_description="the access token lacks a required scope""#
            ),
        ),
    ];
    for (authorization, status, expected) in rows {
        let mut request = Request::post("/mcp");
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let (response, body) = send(&service, request).await;
        assert_eq!(response.status(), status, "{authorization:?}");
        assert_eq!(response.headers()["www-authenticate"], expected.as_str());
        assert_eq!(response.headers()["content-type"], "application/json");
        assert!(body.starts_with(b"{"), "{authorization:?}");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn the_metadata_is_served_without_a_token() {
    let calls = Arc::new(AtomicUsize::new(0));
    let service = service(calls.clone());
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (response, body) = send(&service, Request::get(path)).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        assert_eq!(
            body,
            r#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["mcp"],"bearer_methods_supported":["header"]}"#
        );
        let (response, body) = send(&service, Request::head(path)).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert!(body.is_empty());
        let (response, _) = send(&service, Request::post(path)).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "{path}");
    }
    // Neighbours of the well-known paths are guarded like anything else.
    for path in [
        "/.well-known/oauth-protected-resource/mcp/",
        "/.well-known/oauth-protected-resource/other",
    ] {
        let (response, _) = send(&service, Request::get(path)).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn cors_preflights_pass_unchecked() {
    let calls = Arc::new(AtomicUsize::new(0));
    let service = service(calls.clone());
    let (response, body) = send(
        &service,
        Request::options("/mcp").header("access-control-request-method", "POST"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body, "-");
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    // A plain OPTIONS is not a preflight: it is checked.
    let (response, _) = send(&service, Request::options("/mcp")).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn in_axum_the_handler_extracts_the_principal() {
    use axum::{Extension, Router, routing::post};

    let guard = Guard::builder("https://mcp.example.com/mcp")
        .authorization_server("https://auth.example.com")
        .build(Fixed)
        .unwrap();
    let app = Router::new()
        .route(
            "/mcp",
            post(|Extension(principal): Extension<Principal>| async move {
                format!(
                    "{}/{}",
                    principal.subject,
                    principal.client_id.unwrap_or_default()
                )
            }),
        )
        .layer(guard.layer());
    let request = |path: &str, token: Option<&str>| {
        let mut request = Request::post(path);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request.body(axum::body::Body::empty()).unwrap()
    };
    let response = app
        .clone()
        .oneshot(request("/mcp", Some("good")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "alice/cli");
    let response = app.clone().oneshot(request("/mcp", None)).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // The well-known path has no route: the layer answers it before the fallback.
    let response = app
        .oneshot(
            Request::get("/.well-known/oauth-protected-resource/mcp")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn in_axum_the_metadata_service_mounts_beside_a_route_layer() {
    use axum::{Router, routing::post};

    let guard = Guard::builder("https://mcp.example.com/mcp")
        .authorization_server("https://auth.example.com")
        .build(Fixed)
        .unwrap();
    let mut app = Router::new()
        .route("/mcp", post(|| async { "ok" }))
        .route_layer(guard.layer());
    for path in guard.metadata_paths() {
        app = app.route_service(path, guard.metadata_service());
    }
    let get = |path: &str| Request::get(path).body(axum::body::Body::empty()).unwrap();
    let response = app
        .clone()
        .oneshot(get("/.well-known/oauth-protected-resource"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.starts_with(br#"{"resource":"https://mcp.example.com/mcp""#));
    let response = app.oneshot(get("/elsewhere")).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}
