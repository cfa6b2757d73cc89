use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use http::{HeaderMap, HeaderValue, header};

use super::*;
use crate::{error::TokenError, error::TokenErrorKind, verifier::VerifyFuture};

const RESOURCE: &str = "https://mcp.example.com/mcp";
const METADATA_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

/// Tokens named for what the verifier says about them; counts its calls.
#[derive(Default)]
struct Named {
    calls: AtomicUsize,
}

impl TokenVerifier for Named {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let error = |kind| Err(TokenError::new(kind));
            match token {
                "reader" => Ok(Principal::new("alice").with_scopes(["mcp:read"])),
                "writer" => Ok(Principal::new("bob").with_scopes(["mcp:read", "mcp:write"])),
                "expired" => error(TokenErrorKind::Expired),
                "elsewhere" => error(TokenErrorKind::WrongAudience),
                "down" => error(TokenErrorKind::Unavailable),
                _ => error(TokenErrorKind::Invalid),
            }
        })
    }
}

fn guard(verifier: Arc<Named>) -> Guard {
    Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .scopes_supported(["mcp:read", "mcp:write"])
        .required_scopes(["mcp:read", "mcp:write"])
        .build(verifier)
        .unwrap()
}

fn headers(values: &[&[u8]]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for value in values {
        headers.append(
            header::AUTHORIZATION,
            HeaderValue::from_bytes(value).unwrap(),
        );
    }
    headers
}

fn challenge_with(error: Option<(&str, &str)>) -> String {
    let mut expected =
        format!(r#"Bearer resource_metadata="{METADATA_URL}", scope="mcp:read mcp:write""#);
    if let Some((code, description)) = error {
        expected.push_str(&format!(
            r#", error="{code}", error_description="{description}""#
        ));
    }
    expected
}

/// Headers, the refusal, its status, the error in its challenge, whether the verifier ran.
type Row<'a> = (
    Vec<&'a [u8]>,
    RefusalKind,
    u16,
    Option<(&'a str, &'a str)>,
    bool,
);

#[tokio::test]
async fn refusals_row_by_row() {
    let malformed = Some(("invalid_token", "the bearer credentials are malformed"));
    let too_long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
    let rows: Vec<Row<'_>> = vec![
        // headers, kind, status, error in the challenge, whether the verifier ran
        (vec![], RefusalKind::MissingToken, 401, None, false),
        (
            vec![b"Basic YWxpY2U6c2VjcmV0"],
            RefusalKind::MissingToken,
            401,
            None,
            false,
        ),
        (
            vec![b"Bearerwriter"],
            RefusalKind::MissingToken,
            401,
            None,
            false,
        ),
        (
            vec![b"Bearer"],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer "],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer    "],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer a b"],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer a\"b"],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer a,b"],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer ==="],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer a=b"],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer \xc3\xa9t\xc3\xa9"],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![too_long.as_bytes()],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer writer", b"Bearer writer"],
            RefusalKind::MalformedToken,
            401,
            malformed,
            false,
        ),
        (
            vec![b"Bearer forged"],
            RefusalKind::InvalidToken,
            401,
            Some(("invalid_token", "the access token is invalid")),
            true,
        ),
        (
            vec![b"Bearer expired"],
            RefusalKind::ExpiredToken,
            401,
            Some(("invalid_token", "the access token expired")),
            true,
        ),
        (
            vec![b"Bearer elsewhere"],
            RefusalKind::WrongAudience,
            401,
            Some((
                "invalid_token",
                "the access token was not issued for this resource",
            )),
            true,
        ),
        (
            vec![b"Bearer reader"],
            RefusalKind::InsufficientScope,
            403,
            Some((
                "insufficient_scope",
                "the access token lacks a required scope",
            )),
            true,
        ),
    ];
    for (values, kind, status, error, verified) in rows {
        let verifier = Arc::new(Named::default());
        let guard = guard(verifier.clone());
        let refusal = guard.check(&headers(&values)).await.unwrap_err();
        let label = format!(
            "{:?}",
            values
                .iter()
                .map(|v| String::from_utf8_lossy(v))
                .collect::<Vec<_>>()
        );
        assert_eq!(refusal.kind(), kind, "{label}");
        assert_eq!(refusal.status(), status, "{label}");
        assert_eq!(
            refusal.www_authenticate().unwrap().to_str().unwrap(),
            challenge_with(error),
            "{label}"
        );
        assert_eq!(
            verifier.calls.load(Ordering::Relaxed) == 1,
            verified,
            "{label}"
        );
    }
}

#[tokio::test]
async fn an_unavailable_verifier_is_a_503_without_challenge() {
    let guard = guard(Arc::new(Named::default()));
    let refusal = guard.check(&headers(&[b"Bearer down"])).await.unwrap_err();
    assert_eq!(refusal.kind(), RefusalKind::Unavailable);
    assert_eq!(refusal.status(), 503);
    assert!(refusal.www_authenticate().is_none());
}

#[tokio::test]
async fn accepted_tokens_give_the_principal() {
    let guard = guard(Arc::new(Named::default()));
    for value in [
        &b"Bearer writer"[..],
        b"bearer writer",
        b"BEARER   writer",
        b"Bearer writer ",
    ] {
        let principal = guard.check(&headers(&[value])).await.unwrap();
        assert_eq!(
            principal.subject,
            "bob",
            "{}",
            String::from_utf8_lossy(value)
        );
    }
}

#[tokio::test]
async fn token68_characters_reach_the_verifier() {
    struct Echo;
    impl TokenVerifier for Echo {
        fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
            Box::pin(async move { Ok(Principal::new(token)) })
        }
    }
    let guard = Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .build(Echo)
        .unwrap();
    let token = "aZ09-._~+/==";
    let principal = guard
        .check(&headers(&[format!("Bearer {token}").as_bytes()]))
        .await
        .unwrap();
    assert_eq!(principal.subject, token);
}

#[tokio::test]
async fn without_required_scopes_the_challenge_has_no_scope() {
    let guard = Guard::builder("https://mcp.example.com")
        .authorization_server("https://auth.example.com")
        .build(Arc::new(Named::default()))
        .unwrap();
    let refusal = guard.check(&HeaderMap::new()).await.unwrap_err();
    assert_eq!(
        refusal.www_authenticate().unwrap(),
        r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#
    );
    assert_eq!(
        guard
            .check(&headers(&[b"Bearer reader"]))
            .await
            .unwrap()
            .subject,
        "alice"
    );
}

#[test]
fn the_document_is_exactly_the_configuration() {
    let guard = Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .authorization_server("https://login.example.org/tenant/v2.0")
        .scopes_supported(["mcp:read", "mcp:write"])
        .required_scopes(["mcp:read"])
        .resource_name("Example MCP")
        .resource_documentation("https://docs.example.com/mcp")
        .build(Arc::new(Named::default()))
        .unwrap();
    let response = guard
        .metadata_response(&Method::GET, "/.well-known/oauth-protected-resource/mcp")
        .unwrap();
    assert_eq!(response.status(), 200);
    let expected = concat!(
        r#"{"resource":"https://mcp.example.com/mcp","#,
        r#""authorization_servers":["https://auth.example.com","https://login.example.org/tenant/v2.0"],"#,
        r#""scopes_supported":["mcp:read","mcp:write"],"bearer_methods_supported":["header"],"#,
        r#""resource_name":"Example MCP","resource_documentation":"https://docs.example.com/mcp"}"#
    );
    assert_eq!(guard.inner.document, expected);
    assert_eq!(guard.metadata_url(), METADATA_URL);
    assert_eq!(
        guard.metadata_paths(),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource"
        ]
    );
}

#[test]
fn the_resource_keeps_or_lacks_its_trailing_slash() {
    let rows = [
        (
            "https://mcp.example.com",
            "https://mcp.example.com/.well-known/oauth-protected-resource",
            &["/.well-known/oauth-protected-resource"][..],
        ),
        (
            "https://mcp.example.com/",
            "https://mcp.example.com/.well-known/oauth-protected-resource",
            &["/.well-known/oauth-protected-resource"][..],
        ),
        (
            "https://mcp.example.com/mcp/",
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp/",
            &[
                "/.well-known/oauth-protected-resource/mcp/",
                "/.well-known/oauth-protected-resource",
            ][..],
        ),
        (
            "http://127.0.0.1:3000/mcp",
            "http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp",
            &[
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ][..],
        ),
    ];
    for (resource, url, paths) in rows {
        let guard = Guard::builder(resource)
            .authorization_server("https://auth.example.com")
            .build(Arc::new(Named::default()))
            .unwrap();
        assert_eq!(guard.resource(), resource);
        assert_eq!(guard.metadata().resource, resource);
        assert!(
            std::str::from_utf8(&guard.inner.document)
                .unwrap()
                .starts_with(&format!(r#"{{"resource":"{resource}","#)),
            "{resource}"
        );
        assert_eq!(guard.metadata_url(), url, "{resource}");
        assert_eq!(guard.metadata_paths(), paths, "{resource}");
        for path in paths {
            assert!(guard.metadata_response(&Method::GET, path).is_some());
        }
        assert!(guard.metadata_response(&Method::GET, "/mcp").is_none());
    }
}

#[test]
fn the_root_path_can_be_left_out() {
    let guard = Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .root_metadata(false)
        .build(Arc::new(Named::default()))
        .unwrap();
    assert_eq!(
        guard.metadata_paths(),
        ["/.well-known/oauth-protected-resource/mcp"]
    );
    assert!(
        guard
            .metadata_response(&Method::GET, WELL_KNOWN_PREFIX)
            .is_none()
    );
}

#[test]
fn settings_refused() {
    let build = |builder: GuardBuilder| builder.build(Arc::new(Named::default())).unwrap_err();
    let base = || Guard::builder(RESOURCE).authorization_server("https://auth.example.com");
    assert_eq!(
        build(Guard::builder(RESOURCE)),
        ConfigError::NoAuthorizationServer
    );
    assert_eq!(
        build(Guard::builder("mcp.example.com").authorization_server("https://as")),
        ConfigError::ResourceNotAbsolute
    );
    assert_eq!(
        build(Guard::builder(RESOURCE).authorization_server("as.example.com")),
        ConfigError::InvalidAuthorizationServer {
            url: "as.example.com".into()
        }
    );
    assert_eq!(
        build(base().required_scopes(["a b"])),
        ConfigError::InvalidScope {
            scope: "a b".into()
        }
    );
    assert_eq!(
        build(base().scopes_supported(["a\"b"])),
        ConfigError::InvalidScope {
            scope: "a\"b".into()
        }
    );
    assert_eq!(
        build(base().scopes_supported([""])),
        ConfigError::InvalidScope { scope: "".into() }
    );
    assert_eq!(
        build(base().scopes_supported(["a"]).required_scopes(["b"])),
        ConfigError::RequiredScopeNotSupported { scope: "b".into() }
    );
}

#[test]
fn scopes_supported_default_to_the_required_ones() {
    let guard = Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .required_scopes(["mcp"])
        .build(Arc::new(Named::default()))
        .unwrap();
    assert_eq!(guard.metadata().scopes_supported, ["mcp"]);
}

#[test]
fn step_up_refusals_name_the_scopes_asked() {
    let guard = guard(Arc::new(Named::default()));
    let refusal = guard.insufficient_scope(["mcp:read", "bad scope", "mcp:admin"]);
    assert_eq!(refusal.kind(), RefusalKind::InsufficientScope);
    assert_eq!(refusal.status(), 403);
    assert_eq!(
        refusal.www_authenticate().unwrap(),
        format!(
            r#"Bearer resource_metadata="{METADATA_URL}", scope="mcp:read mcp:admin", error="insufficient_scope", error_description="the access token lacks a required scope""#
        )
        .as_str()
    );
}

/// A token accepted once is not verified again while it is remembered; refused tokens are
/// verified every time; a scope missing from a remembered token is still refused; with no
/// cache, every request is verified.
#[tokio::test]
async fn accepted_tokens_are_verified_once() {
    let verifier = Arc::new(Named::default());
    let guard = guard(Arc::clone(&verifier));
    for _ in 0..3 {
        assert_eq!(
            guard
                .check(&headers(&[b"Bearer writer"]))
                .await
                .unwrap()
                .subject,
            "bob"
        );
    }
    assert_eq!(verifier.calls.load(Ordering::Relaxed), 1);
    for _ in 0..2 {
        let refused = guard
            .check(&headers(&[b"Bearer reader"]))
            .await
            .unwrap_err();
        assert_eq!(refused.kind(), RefusalKind::InsufficientScope);
        let refused = guard
            .check(&headers(&[b"Bearer expired"]))
            .await
            .unwrap_err();
        assert_eq!(refused.kind(), RefusalKind::ExpiredToken);
    }
    // "reader" was accepted by the verifier (then refused for its scope): remembered once.
    assert_eq!(verifier.calls.load(Ordering::Relaxed), 1 + 1 + 2);

    let verifier = Arc::new(Named::default());
    let uncached = Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .cached_tokens(0)
        .build(Arc::clone(&verifier))
        .unwrap();
    for _ in 0..3 {
        uncached.check(&headers(&[b"Bearer writer"])).await.unwrap();
    }
    assert_eq!(verifier.calls.load(Ordering::Relaxed), 3);
}
