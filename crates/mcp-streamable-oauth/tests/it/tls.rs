//! The flows against an authorization server (and resource metadata) served over TLS with a
//! certificate the test makes: trusted through `OAuthBuilder::tls_config`, refused with an
//! error that says why when it is not.

use std::sync::Arc;

use mcp_streamable_oauth::{OAuth, Registration};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::world::{self, Options, ask, refused};

/// A certificate authority of the test's, and a certificate it signed for `localhost`.
struct Pki {
    roots: rustls::RootCertStore,
    server: Arc<rustls::ServerConfig>,
}

impl Pki {
    fn new() -> Pki {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name
            .push(DnType::CommonName, "oauth tests");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let server = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], key)
            .unwrap();
        Pki {
            roots,
            server: Arc::new(server),
        }
    }

    /// A client configuration trusting this authority alone.
    fn client(&self) -> rustls::ClientConfig {
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.roots.clone())
            .with_no_client_auth()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
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
    let pki = Pki::new();
    let server = world::start_tls(Options::default(), Arc::clone(&pki.server)).await;
    assert!(
        server.url.starts_with("https://localhost:"),
        "{}",
        server.url
    );
    let oauth = machine(&server.url)
        .tls_config(pki.client())
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
    let pki = Pki::new();
    let server = world::start_tls(Options::default(), Arc::clone(&pki.server)).await;
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
