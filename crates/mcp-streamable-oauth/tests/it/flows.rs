//! The provider's flows: discovery orders, PKCE, scopes, step-up, refresh, issuer checks,
//! client credentials, re-registration.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::sync::Arc;

use mcp_streamable_client::AuthContext;
use mcp_streamable_oauth::{
    ErrorKind, MemoryStore, OAuth, PrivateKeyJwt, Registration, TokenStore,
};
use sha2::{Digest, Sha256};

use crate::world::{self, Browser, BrowserAt, Options, ask, refused};

fn provider(base: &str) -> OAuth {
    OAuth::builder(&format!("{base}/mcp"))
        .authorization_code(Browser)
        .build()
        .unwrap()
}

fn kind(e: mcp_streamable_oauth::BoxError) -> ErrorKind {
    e.downcast::<mcp_streamable_oauth::Error>().unwrap().kind()
}

fn challenge(base: &str, extra: &str) -> String {
    format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"{extra}"#)
}

#[tokio::test]
async fn a_401_discovers_registers_and_grants_with_pkce_resource_and_scope() {
    let server = world::start(Options::default()).await;
    let oauth = provider(&server.url);
    assert_eq!(ask(&oauth, AuthContext::default()).await.unwrap(), None);
    let ctx = refused(401, None, &challenge(&server.url, r#", scope="mcp:read""#));
    assert_eq!(
        ask(&oauth, ctx).await.unwrap().as_deref(),
        Some("Bearer at-1")
    );
    assert_eq!(
        server.paths(),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/register",
            "/authorize",
            "/token"
        ]
    );
    let log = server.log();
    let (authorize, token) = (&log[3], &log[4]);
    let resource = format!("{}/mcp", server.url);
    assert_eq!(authorize.param("resource"), Some(resource.clone()));
    assert_eq!(token.param("resource"), Some(resource));
    assert_eq!(authorize.param("scope").as_deref(), Some("mcp:read"));
    assert_eq!(
        authorize.param("code_challenge_method").as_deref(),
        Some("S256")
    );
    let verifier = token.param("code_verifier").unwrap();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    assert_eq!(authorize.param("code_challenge"), Some(challenge));
    assert_eq!(token.param("client_id").as_deref(), Some("client-1"));
    assert_eq!(
        token.param("redirect_uri").as_deref(),
        Some(world::REDIRECT_URI)
    );
    // The next request carries the token without asking anyone.
    assert_eq!(
        ask(&oauth, AuthContext::default())
            .await
            .unwrap()
            .as_deref(),
        Some("Bearer at-1")
    );
    assert_eq!(server.log().len(), 5);
    assert!(!format!("{oauth:?}").contains("at-1"));
}

#[tokio::test]
async fn resource_metadata_path_aware_first_then_root_and_scopes_supported() {
    let server = world::start(Options {
        prm_path: Some("/.well-known/oauth-protected-resource"),
        resource: None,
        scopes_supported: Some(vec!["a", "b"]),
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url);
    let ctx = refused(401, None, "Bearer");
    ask(&oauth, ctx).await.unwrap();
    let paths = server.paths();
    assert_eq!(
        paths[..3],
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server"
        ]
    );
    let authorize = server
        .log()
        .into_iter()
        .find(|s| s.path() == "/authorize")
        .unwrap();
    assert_eq!(authorize.param("scope").as_deref(), Some("a b"));
}

#[tokio::test]
async fn a_challenges_metadata_url_that_fails_falls_back_to_the_well_known_ones() {
    let server = world::start(Options::default()).await;
    let oauth = provider(&server.url);
    let gone = format!(r#"Bearer resource_metadata="{}/gone""#, server.url);
    let token = ask(&oauth, refused(401, None, &gone)).await.unwrap();
    assert_eq!(token.as_deref(), Some("Bearer at-1"));
    assert_eq!(
        server.paths()[..3],
        [
            "/gone",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server"
        ]
    );
}

#[tokio::test]
async fn an_issuer_with_a_path_is_looked_up_in_the_specs_order() {
    let server = world::start(Options {
        issuer_path: "/tenant1",
        as_metadata_path: Some("/tenant1/.well-known/openid-configuration"),
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url);
    ask(&oauth, refused(401, None, &challenge(&server.url, "")))
        .await
        .unwrap();
    assert_eq!(
        server.paths()[1..4],
        [
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            "/tenant1/.well-known/openid-configuration"
        ]
    );
    let authorize = server
        .log()
        .into_iter()
        .find(|s| s.path() == "/tenant1/authorize");
    assert!(
        authorize.unwrap().param("scope").is_none(),
        "no scope known: none asked"
    );
}

#[tokio::test]
async fn metadata_of_another_issuer_and_a_resource_of_another_server_are_refused() {
    let server = world::start(Options {
        claimed_issuer: Some("https://attacker.example.com"),
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url);
    let err = ask(&oauth, refused(401, None, &challenge(&server.url, ""))).await;
    assert_eq!(kind(err.unwrap_err()), ErrorKind::IssuerMismatch);
    assert!(
        !server
            .paths()
            .iter()
            .any(|p| p == "/register" || p == "/authorize")
    );

    let server = world::start(Options {
        resource: Some("https://evil.example.com/mcp"),
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url);
    let err = ask(&oauth, refused(401, None, &challenge(&server.url, ""))).await;
    assert_eq!(kind(err.unwrap_err()), ErrorKind::ResourceMismatch);
    assert_eq!(server.log().len(), 1);
}

#[tokio::test]
async fn a_2025_03_26_server_without_metadata_uses_its_root_endpoints() {
    let server = world::start(Options {
        prm_path: None,
        as_metadata_path: None,
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url);
    let token = ask(&oauth, refused(401, None, "Bearer")).await.unwrap();
    assert_eq!(token.as_deref(), Some("Bearer at-1"));
    assert_eq!(
        server.paths()[2..],
        [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
            "/register",
            "/authorize",
            "/token"
        ]
    );
    let token = server
        .log()
        .into_iter()
        .find(|s| s.path() == "/token")
        .unwrap();
    assert_eq!(token.param("resource"), Some(format!("{}/mcp", server.url)));
}

#[tokio::test]
async fn tokens_are_refreshed_before_expiry_and_after_a_401() {
    let server = world::start(Options {
        expires_in: 30,
        as_scopes_supported: Some(vec!["mcp", "offline_access"]),
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url);
    let first = ask(
        &oauth,
        refused(401, None, &challenge(&server.url, r#", scope="mcp""#)),
    );
    assert_eq!(first.await.unwrap().as_deref(), Some("Bearer at-1"));
    let authorize = server
        .log()
        .into_iter()
        .find(|s| s.path() == "/authorize")
        .unwrap();
    assert_eq!(
        authorize.param("scope").as_deref(),
        Some("mcp offline_access")
    );
    // 30 s left is inside the 60 s margin: the next request refreshes first.
    let next = ask(&oauth, AuthContext::default()).await.unwrap();
    assert_eq!(next.as_deref(), Some("Bearer at-2"));
    let refresh = server.log().pop().unwrap();
    assert_eq!(
        refresh.param("grant_type").as_deref(),
        Some("refresh_token")
    );
    assert_eq!(refresh.param("refresh_token").as_deref(), Some("rt-1"));
    assert_eq!(
        refresh.param("resource"),
        Some(format!("{}/mcp", server.url))
    );
    // A 401 for that token: discovery again, then a refresh, no new authorization.
    let after = ask(
        &oauth,
        refused(401, Some("Bearer at-2"), &challenge(&server.url, "")),
    );
    assert_eq!(after.await.unwrap().as_deref(), Some("Bearer at-3"));
    assert_eq!(
        server.paths().iter().filter(|p| *p == "/authorize").count(),
        1
    );
    // A 401 for a token already replaced: the new one, at once.
    let stale = ask(
        &oauth,
        refused(401, Some("Bearer at-1"), &challenge(&server.url, "")),
    );
    assert_eq!(stale.await.unwrap().as_deref(), Some("Bearer at-3"));
    let stored = oauth.tokens().await.unwrap().unwrap();
    assert_eq!(stored.refresh_token.unwrap().expose(), "rt-3");
}

#[tokio::test]
async fn a_token_about_to_expire_without_a_refresh_token_is_still_sent() {
    let server = world::start(Options {
        expires_in: 30,
        refresh_tokens: false,
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url);
    ask(&oauth, refused(401, None, &challenge(&server.url, "")))
        .await
        .unwrap();
    // Inside the refresh margin, but nothing to refresh with: the token goes on until refused.
    let next = ask(&oauth, AuthContext::default()).await.unwrap();
    assert_eq!(next.as_deref(), Some("Bearer at-1"));
    assert_eq!(server.paths().iter().filter(|p| *p == "/token").count(), 1);
}

#[tokio::test]
async fn a_step_up_asks_for_the_union_and_stops_when_asking_again_cannot_help() {
    let server = world::start(Options::default()).await;
    let oauth = provider(&server.url);
    let read = challenge(&server.url, r#", scope="mcp:read""#);
    ask(&oauth, refused(401, None, &read)).await.unwrap();
    let write = challenge(
        &server.url,
        r#", error="insufficient_scope", scope="mcp:write""#,
    );
    let stepped = ask(&oauth, refused(403, Some("Bearer at-1"), &write))
        .await
        .unwrap();
    assert_eq!(stepped.as_deref(), Some("Bearer at-2"));
    let authorizations: Vec<_> = server
        .log()
        .into_iter()
        .filter(|s| s.path() == "/authorize")
        .map(|s| s.param("scope").unwrap())
        .collect();
    assert_eq!(authorizations, ["mcp:read", "mcp:write mcp:read"]);
    // The token has mcp:write now: a 403 for it again is the server's word, not a step-up.
    let again = ask(&oauth, refused(403, Some("Bearer at-2"), &write)).await;
    assert_eq!(kind(again.unwrap_err()), ErrorKind::StepUpLimit);
    assert_eq!(
        server.paths().iter().filter(|p| *p == "/authorize").count(),
        2
    );
}

#[tokio::test]
async fn step_ups_are_limited_in_number() {
    let server = world::start(Options::default()).await;
    let oauth = OAuth::builder(&format!("{}/mcp", server.url))
        .authorization_code(Browser)
        .max_step_ups(1)
        .build()
        .unwrap();
    ask(&oauth, refused(401, None, &challenge(&server.url, "")))
        .await
        .unwrap();
    let more = |scope: &str| {
        challenge(
            &server.url,
            &format!(r#", error="insufficient_scope", scope="{scope}""#),
        )
    };
    ask(&oauth, refused(403, Some("Bearer at-1"), &more("a")))
        .await
        .unwrap();
    let err = ask(&oauth, refused(403, Some("Bearer at-2"), &more("b"))).await;
    assert_eq!(kind(err.unwrap_err()), ErrorKind::StepUpLimit);
    assert_eq!(
        server.paths().iter().filter(|p| *p == "/authorize").count(),
        2
    );
}

#[tokio::test]
async fn a_forgotten_client_registers_again() {
    let server = world::start(Options {
        forgotten_clients: vec!["client-1".into()],
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url);
    let token = ask(&oauth, refused(401, None, &challenge(&server.url, ""))).await;
    assert_eq!(token.unwrap().as_deref(), Some("Bearer at-1"));
    let registrations = server.paths().iter().filter(|p| *p == "/register").count();
    assert_eq!(registrations, 2);
    let token = server.log().pop().unwrap();
    assert_eq!(token.param("client_id").as_deref(), Some("client-2"));
}

#[tokio::test]
async fn client_credentials_with_each_authentication_method() {
    for (methods, expect_basic) in [
        (vec!["client_secret_basic"], true),
        (vec!["client_secret_post"], false),
    ] {
        let server = world::start(Options {
            auth_methods: methods,
            ..Options::default()
        })
        .await;
        let oauth = OAuth::builder(&format!("{}/mcp", server.url))
            .client_credentials()
            .preregistered(Registration::with_secret("machine", "s3cret"), None)
            .build()
            .unwrap();
        let token = ask(&oauth, refused(401, None, &challenge(&server.url, ""))).await;
        assert_eq!(token.unwrap().as_deref(), Some("Bearer at-1"));
        let request = server.log().pop().unwrap();
        assert_eq!(
            request.param("grant_type").as_deref(),
            Some("client_credentials")
        );
        assert!(
            !server
                .paths()
                .iter()
                .any(|p| p == "/register" || p == "/authorize")
        );
        if expect_basic {
            // "machine:s3cret"
            assert_eq!(
                request.authorization.as_deref(),
                Some("Basic bWFjaGluZTpzM2NyZXQ=")
            );
            assert_eq!(request.param("client_secret"), None);
        } else {
            assert_eq!(request.authorization, None);
            assert_eq!(request.param("client_secret").as_deref(), Some("s3cret"));
        }
    }
}

/// An EC P-256 key in PKCS#8, made for these tests only (`openssl genpkey`).
const EC_KEY: &str = include_str!("../fixtures/ec-p256.pem");

#[tokio::test]
async fn client_credentials_with_a_private_key_jwt() {
    let server = world::start(Options {
        auth_methods: vec!["private_key_jwt"],
        ..Options::default()
    })
    .await;
    let oauth = OAuth::builder(&format!("{}/mcp", server.url))
        .client_credentials()
        .preregistered(Registration::new("machine"), None)
        .private_key(PrivateKeyJwt::from_pem(EC_KEY, "ES256").unwrap())
        .build()
        .unwrap();
    ask(&oauth, refused(401, None, &challenge(&server.url, "")))
        .await
        .unwrap();
    let request = server.log().pop().unwrap();
    assert_eq!(
        request.param("client_assertion_type").as_deref(),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    let assertion = request.param("client_assertion").unwrap();
    let claims = assertion.split('.').nth(1).unwrap();
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    assert_eq!(claims["iss"], "machine");
    assert_eq!(claims["sub"], "machine");
    assert_eq!(claims["aud"], server.url.as_str());
    assert!(claims["exp"].as_u64() > claims["iat"].as_u64());
}

#[tokio::test]
async fn a_shared_store_carries_tokens_and_the_registration_to_the_next_run() {
    let server = world::start(Options::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let run = || {
        OAuth::builder(&format!("{}/mcp", server.url))
            .authorization_code(Browser)
            .store(store.clone())
            .build()
            .unwrap()
    };
    let first = run();
    ask(&first, refused(401, None, &challenge(&server.url, "")))
        .await
        .unwrap();
    assert_eq!(server.log().len(), 5);
    // The next run sends the stored token at once, without a request of its own.
    let second = run();
    let token = ask(&second, AuthContext::default()).await.unwrap();
    assert_eq!(token.as_deref(), Some("Bearer at-1"));
    assert_eq!(server.log().len(), 5);
    // Refused, it refreshes with the stored refresh token: no registration, no authorization.
    let fresh = ask(
        &second,
        refused(401, Some("Bearer at-1"), &challenge(&server.url, "")),
    );
    assert_eq!(fresh.await.unwrap().as_deref(), Some("Bearer at-2"));
    let paths = server.paths();
    assert_eq!(paths.iter().filter(|p| *p == "/register").count(), 1);
    assert_eq!(paths.iter().filter(|p| *p == "/authorize").count(), 1);
    let registration = store.registration(&server.url).await.unwrap().unwrap();
    assert_eq!(registration.client_id, "client-1");
    assert!(registration.dynamic);
}

#[tokio::test]
async fn a_stored_registration_for_another_redirect_uri_is_made_again() {
    let server = world::start(Options::default()).await;
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let first = OAuth::builder(&format!("{}/mcp", server.url))
        .authorization_code(Browser)
        .store(store.clone())
        .build()
        .unwrap();
    ask(&first, refused(401, None, &challenge(&server.url, "")))
        .await
        .unwrap();
    // The next run listens on another port: its redirect URI is not the registered one.
    store
        .set_tokens(&format!("{}/mcp", server.url), None)
        .await
        .unwrap();
    let second = OAuth::builder(&format!("{}/mcp", server.url))
        .authorization_code(BrowserAt("http://127.0.0.1:10/callback"))
        .store(store.clone())
        .build()
        .unwrap();
    ask(&second, refused(401, None, &challenge(&server.url, "")))
        .await
        .unwrap();
    let registrations: Vec<_> = server
        .log()
        .into_iter()
        .filter(|s| s.path() == "/register")
        .collect();
    assert_eq!(registrations.len(), 2);
    assert!(
        registrations[1]
            .body
            .contains("http://127.0.0.1:10/callback")
    );
    let token = server.log().pop().unwrap();
    assert_eq!(token.param("client_id").as_deref(), Some("client-2"));
}
