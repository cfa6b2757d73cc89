//! The flows against an authorization server (and resource metadata) served over TLS with a
//! certificate the test makes: trusted through `OAuthBuilder::tls_config`, refused with an
//! error that says why when it is not.

use std::sync::Arc;

use mcp_http_client::testing::Authority;
use mcp_streamable_oauth::{OAuth, Registration};

use crate::world::{self, Options, ask, refused};

/// A certificate authority of the test's, and the configuration of a server presenting a
/// certificate it signed for `localhost`.
fn pki() -> (Authority, Arc<rustls::ServerConfig>) {
    let authority = Authority::new("oauth tests");
    let server = authority.sign(&["localhost"], None).server_config(&[]);
    (authority, server)
}

fn challenge(base: &str) -> String {
    format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#)
}

fn machine(base: &str) -> mcp_streamable_oauth::OAuthBuilder {
    OAuth::builder(&format!("{base}/mcp"))
        .client_credentials()
        .preregistered(Registration::with_secret("machine", "s3cret"), None)
}

#[tokio::test]
async fn client_credentials_against_an_authorization_server_over_https() {
    let (authority, tls) = pki();
    let server = world::start_tls(Options::default(), tls).await;
    assert!(
        server.url.starts_with("https://localhost:"),
        "{}",
        server.url
    );
    let oauth = machine(&server.url)
        .tls_config(authority.client_config())
        .build()
        .unwrap();
    let token = ask(&oauth, refused(401, None, &challenge(&server.url))).await;
    assert_eq!(token.unwrap().as_deref(), Some("Bearer at-1"));
    assert_eq!(
        server.paths(),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/token"
        ]
    );
}

#[tokio::test]
async fn an_authorization_server_with_a_certificate_not_trusted_is_an_error_that_says_so() {
    let (_authority, tls) = pki();
    let server = world::start_tls(Options::default(), tls).await;
    // The platform's roots (or the webpki roots) know nothing of the test's authority.
    let oauth = machine(&server.url).build().unwrap();
    let error = ask(&oauth, refused(401, None, &challenge(&server.url)))
        .await
        .unwrap_err();
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    assert!(
        text.contains("invalid peer certificate: UnknownIssuer"),
        "{text}"
    );
    assert!(server.paths().is_empty(), "{:?}", server.paths());
}
