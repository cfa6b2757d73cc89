//! C9: the proofs of possession (DPoP, RFC 9449) an auth provider gives each try, and the
//! server's nonce.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http::{HeaderValue, Method};
use mcp_streamable_client::{AuthContext, AuthFuture, AuthProvider, BoxError, ProofContext};

use crate::fake::{self, Fake};
use crate::*;

/// A provider of one DPoP token whose "proof" spells out what it was made for, numbered so
/// that no two are alike.
#[derive(Default)]
struct Spelling {
    asked: Arc<Mutex<Vec<AuthContext>>>,
    made: AtomicUsize,
}

impl AuthProvider for Spelling {
    fn authorization(&self, context: AuthContext) -> AuthFuture {
        self.asked.lock().unwrap().push(context);
        Box::pin(async { Ok(Some(HeaderValue::from_static("DPoP tok"))) })
    }

    fn proof(&self, context: &ProofContext<'_>) -> Result<Option<HeaderValue>, BoxError> {
        let n = self.made.fetch_add(1, Ordering::SeqCst);
        let text = |v: Option<&HeaderValue>| v.map_or("-", |v| v.to_str().unwrap()).to_owned();
        let proof = format!(
            "{} {} {} {} #{n}",
            context.method,
            context.uri,
            text(context.authorization),
            text(context.nonce)
        );
        Ok(Some(HeaderValue::from_str(&proof)?))
    }
}

/// The nonce of a proof made by [`Spelling`].
fn nonce(proof: &str) -> &str {
    proof.split(' ').nth(4).unwrap()
}

#[tokio::test]
async fn c9_each_try_carries_a_fresh_proof_for_its_method_and_url() {
    let server = Fake::start(|req| async move { fake::standard(&req) }).await;
    let mut conn = connect(builder(&server.url).auth(Spelling::default())).await;
    handshake(&mut conn).await;
    server
        .wait_for(|log| log.iter().any(|r| r.method == Method::GET))
        .await;
    within(conn.close()).await.unwrap();

    let log = server.requests();
    assert_eq!(log.len(), 4, "{log:#?}");
    let mut proofs: Vec<&str> = Vec::new();
    for req in &log {
        assert_eq!(req.header("authorization"), Some("DPoP tok"));
        let proof = req.header("dpop").unwrap();
        let start = format!("{} {} DPoP tok - #", req.method, server.url);
        assert!(proof.starts_with(&start), "{proof} for {req:?}");
        assert!(!proofs.contains(&proof), "{proof} sent twice");
        proofs.push(proof);
    }
}

#[tokio::test]
async fn c9_a_401_asking_for_a_dpop_nonce_is_tried_again_once_with_it() {
    let server = Fake::start(|req| async move {
        let proof = req.header("dpop").unwrap_or_default();
        if !proof.contains(" n1 ") {
            let mut refused = fake::status(401, "nonce");
            let headers = refused.headers_mut();
            let challenge = r#"DPoP error="use_dpop_nonce", error_description="nonce""#;
            headers.insert("www-authenticate", HeaderValue::from_static(challenge));
            headers.insert("dpop-nonce", HeaderValue::from_static("n1"));
            return refused;
        }
        fake::standard(&req)
    })
    .await;
    let provider = Spelling::default();
    let asked = provider.asked.clone();
    let mut conn = connect(builder(&server.url).auth(provider)).await;
    handshake(&mut conn).await;
    within(conn.close()).await.unwrap();

    let log = server.requests();
    let nonces: Vec<&str> = log
        .iter()
        .map(|r| nonce(r.header("dpop").unwrap()))
        .collect();
    // The first try had none; every try after the demand carries it, without another 401.
    assert_eq!(nonces[0], "-");
    assert!(nonces[1..].iter().all(|n| *n == "n1"), "{nonces:?}");
    assert!(log[0].header("dpop").unwrap().ends_with(" #0"));
    assert!(!log[1].header("dpop").unwrap().ends_with("#0"));
    // The token was fine: the provider was never asked for another.
    assert!(asked.lock().unwrap().iter().all(|c| !c.is_retry()));
}

#[tokio::test]
async fn c9_a_second_nonce_demand_is_a_401_like_any_other() {
    let server = Fake::start(|_| async move {
        let mut refused = fake::status(401, "nonce again");
        let headers = refused.headers_mut();
        let challenge = r#"DPoP error="use_dpop_nonce""#;
        headers.insert("www-authenticate", HeaderValue::from_static(challenge));
        headers.insert("dpop-nonce", HeaderValue::from_static("n2"));
        refused
    })
    .await;
    let provider = Spelling::default();
    let asked = provider.asked.clone();
    let conn = connect(builder(&server.url).auth(provider)).await;
    let err = send(&conn, initialize(1)).await.unwrap_err();
    assert_eq!(cause(&err).status().map(|s| s.as_u16()), Some(401));
    // The first try, the one with the nonce, then the provider is asked as after any 401 (it
    // answers the same token, so nothing more is sent).
    assert_eq!(server.count(Method::POST), 2);
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2);
    assert!(asked[1].is_retry());
}
