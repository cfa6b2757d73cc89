//! The JWT-bearer grants: workload identity federation and enterprise-managed authorization
//! (an ID-JAG from the identity provider first).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mcp_streamable_client::AuthContext;
use mcp_streamable_oauth::{BoxError, ErrorKind, IdentityProvider, OAuth, Registration, Secret};

use crate::world::{self, Options, ask, refused};

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

fn challenge(base: &str) -> String {
    format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#)
}

fn kind(e: BoxError) -> ErrorKind {
    e.downcast::<mcp_streamable_oauth::Error>().unwrap().kind()
}

/// A workload provider whose JWT changes each time it is read, and how often it was.
fn workload(base: &str) -> (OAuth, Arc<AtomicUsize>) {
    let reads = Arc::new(AtomicUsize::new(0));
    let jwt = {
        let reads = reads.clone();
        move || {
            let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok::<_, BoxError>(Secret::new(format!("workload-jwt-{n}"))) }
        }
    };
    let oauth = OAuth::builder(&format!("{base}/mcp"))
        .preregistered(Registration::new("workload"), None)
        .workload_identity(jwt)
        .build()
        .unwrap();
    (oauth, reads)
}

#[tokio::test]
async fn workload_identity_grants_with_a_fresh_workload_jwt_each_time() {
    let server = world::start(Options {
        expires_in: 30,
        refresh_tokens: false,
        ..Options::default()
    })
    .await;
    let (oauth, reads) = workload(&server.url);
    let ctx = refused(401, None, &challenge(&server.url));
    assert_eq!(
        ask(&oauth, ctx).await.unwrap().as_deref(),
        Some("Bearer at-1")
    );
    // The token expires within the margin and has no refresh token: the next request gets a
    // new grant, with the workload's JWT read again.
    let next = ask(&oauth, AuthContext::default()).await.unwrap();
    assert_eq!(next.as_deref(), Some("Bearer at-2"));
    assert_eq!(reads.load(Ordering::SeqCst), 2);
    let log = server.log();
    let grants: Vec<_> = log.iter().filter(|s| s.path() == "/token").collect();
    assert_eq!(grants.len(), 2);
    for (n, grant) in grants.iter().enumerate() {
        assert_eq!(grant.param("grant_type").as_deref(), Some(JWT_BEARER));
        let jwt = format!("workload-jwt-{}", n + 1);
        assert_eq!(grant.param("assertion"), Some(jwt));
        assert_eq!(grant.param("client_id").as_deref(), Some("workload"));
        assert_eq!(grant.param("resource"), Some(format!("{}/mcp", server.url)));
    }
    assert!(!server.paths().iter().any(|p| p == "/register"));
}

#[tokio::test]
async fn a_refused_workload_grant_is_not_tried_again() {
    let server = world::start(Options {
        forgotten_clients: vec!["workload".into()],
        ..Options::default()
    })
    .await;
    let (oauth, _) = workload(&server.url);
    let ctx = refused(401, None, &challenge(&server.url));
    assert_eq!(kind(ask(&oauth, ctx).await.unwrap_err()), ErrorKind::Token);
    let grants = server.paths().iter().filter(|p| *p == "/token").count();
    assert_eq!(grants, 1);
}

#[tokio::test]
async fn enterprise_managed_exchanges_the_id_token_then_grants_with_the_id_jag() {
    let server = world::start(Options {
        auth_methods: vec!["client_secret_basic"],
        ..Options::default()
    })
    .await;
    let idp = IdentityProvider::new(
        &format!("{}/idp/token", server.url),
        Registration::new("idp-client"),
        Secret::new("the-id-token"),
    );
    let oauth = OAuth::builder(&format!("{}/mcp", server.url))
        .preregistered(Registration::with_secret("agent", "agent-secret"), None)
        .enterprise_managed(idp)
        .build()
        .unwrap();
    let ctx = refused(401, None, &challenge(&server.url));
    // The exchange's answer was the first token the fake issued: the grant's is the second.
    assert_eq!(
        ask(&oauth, ctx).await.unwrap().as_deref(),
        Some("Bearer at-2")
    );

    let log = server.log();
    let exchange = log.iter().find(|s| s.path() == "/idp/token").unwrap();
    let param = |name: &str| exchange.param(name);
    assert_eq!(
        param("grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:token-exchange")
    );
    assert_eq!(
        param("requested_token_type").as_deref(),
        Some("urn:ietf:params:oauth:token-type:id-jag")
    );
    assert_eq!(param("audience"), Some(server.url.clone()));
    assert_eq!(param("resource"), Some(format!("{}/mcp", server.url)));
    assert_eq!(param("subject_token").as_deref(), Some("the-id-token"));
    assert_eq!(
        param("subject_token_type").as_deref(),
        Some("urn:ietf:params:oauth:token-type:id_token")
    );
    assert_eq!(param("client_id").as_deref(), Some("idp-client"));

    let grant = log.iter().find(|s| s.path() == "/token").unwrap();
    assert_eq!(grant.param("grant_type").as_deref(), Some(JWT_BEARER));
    assert_eq!(grant.param("assertion").as_deref(), Some("jag-1"));
    let basic = grant
        .authorization
        .as_deref()
        .unwrap()
        .strip_prefix("Basic ");
    let pair = STANDARD.decode(basic.unwrap()).unwrap();
    assert_eq!(pair, b"agent:agent-secret");
    assert!(!format!("{oauth:?}").contains("the-id-token"));
}
