//! The cache and its rate limit, without sockets: the key set comes from a fake fetch, and time
//! is tokio's paused clock.

use std::{
    collections::VecDeque,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use bytes::Bytes;
use jsonwebtoken::{EncodingKey, Header};

use super::*;
use crate::error::JwksErrorKind;

const ISSUER: &str = "https://auth.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const RSA1: &[u8] = include_bytes!("../../tests/fixtures/rsa1.pem");
const RSA2: &[u8] = include_bytes!("../../tests/fixtures/rsa2.pem");
const PUBLIC: &str = include_str!("../../tests/fixtures/public.json");

/// A key set document holding the fixture keys `names`, each with its name as `kid`.
fn jwks(names: &[&str]) -> Bytes {
    let public: serde_json::Value = serde_json::from_str(PUBLIC).unwrap();
    let keys: Vec<serde_json::Value> = names
        .iter()
        .map(|name| {
            let mut key = public[*name].clone();
            key["kid"] = (*name).into();
            key
        })
        .collect();
    Bytes::from(serde_json::to_vec(&serde_json::json!({ "keys": keys })).unwrap())
}

fn token(kid: &str, pem: &[u8]) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    let claims = serde_json::json!({
        "sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 300, "scope": "mcp",
    });
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_pem(pem).unwrap()).unwrap()
}

/// Answers fetches from a queue (the last answer repeats), after a pause, and counts them.
#[derive(Clone)]
struct Fake {
    answers: Arc<Mutex<VecDeque<Result<Bytes, JwksErrorKind>>>>,
    calls: Arc<AtomicUsize>,
}

impl Fake {
    fn new(answers: impl IntoIterator<Item = Result<Bytes, JwksErrorKind>>) -> Fake {
        Fake {
            answers: Arc::new(Mutex::new(answers.into_iter().collect())),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Fetch for Fake {
    fn fetch(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Bytes, JwksError>> + Send + '_>>
    {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = {
            let mut answers = self.answers.lock().unwrap();
            if answers.len() > 1 {
                answers.pop_front().unwrap()
            } else {
                answers.front().cloned().unwrap()
            }
        };
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            answer.map_err(JwksError::new)
        })
    }
}

fn verifier(fake: &Fake) -> JwtVerifier {
    JwtVerifier::builder(ISSUER, "https://auth.example.com/jwks", RESOURCE)
        .min_refresh_interval(Duration::from_secs(10))
        .max_key_age(Duration::from_secs(3600))
        .with_fetch(Box::new(fake.clone()))
}

#[tokio::test(start_paused = true)]
async fn keys_are_fetched_once_and_reused() {
    let fake = Fake::new([Ok(jwks(&["rsa1"]))]);
    let verifier = verifier(&fake);
    for _ in 0..5 {
        let principal = verifier.verify(&token("rsa1", RSA1)).await.unwrap();
        assert_eq!(principal.subject, "alice");
    }
    assert_eq!(fake.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn unknown_key_ids_refetch_at_most_once_per_interval() {
    let fake = Fake::new([Ok(jwks(&["rsa1"]))]);
    let verifier = verifier(&fake);
    verifier.refresh().await.unwrap();
    let forged = token("made-up", RSA2);
    for _ in 0..20 {
        let error = verifier.verify(&forged).await.unwrap_err();
        assert_eq!(error.kind(), TokenErrorKind::Invalid);
    }
    assert_eq!(fake.calls(), 1, "the refresh was too recent");
    tokio::time::advance(Duration::from_secs(11)).await;
    for _ in 0..20 {
        verifier.verify(&forged).await.unwrap_err();
    }
    assert_eq!(fake.calls(), 2, "one fetch per interval");
}

#[tokio::test(start_paused = true)]
async fn concurrent_unknown_key_ids_share_one_fetch() {
    let fake = Fake::new([Ok(jwks(&["rsa1"])), Ok(jwks(&["rsa1", "rsa2"]))]);
    let verifier = verifier(&fake);
    verifier.refresh().await.unwrap();
    tokio::time::advance(Duration::from_secs(11)).await;
    let rotated = token("rsa2", RSA2);
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let verifier = verifier.clone();
            let rotated = rotated.clone();
            tokio::spawn(async move { verifier.verify(&rotated).await.map(|p| p.subject) })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap(), "alice");
    }
    assert_eq!(fake.calls(), 2);
}

/// Long enough, on the paused clock, for a background fetch (100 ms in [`Fake`]) to end.
async fn let_background_fetch_finish() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn old_keys_are_refetched_beside_the_request_and_kept_when_the_fetch_fails() {
    let fake = Fake::new([Ok(jwks(&["rsa1"])), Err(JwksErrorKind::Timeout)]);
    let verifier = verifier(&fake);
    let good = token("rsa1", RSA1);
    verifier.verify(&good).await.unwrap();
    tokio::time::advance(Duration::from_secs(3601)).await;
    let started = Instant::now();
    verifier.verify(&good).await.unwrap();
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "the request did not wait for the fetch"
    );
    let_background_fetch_finish().await;
    assert_eq!(fake.calls(), 2, "stale keys trigger a fetch");
    verifier.verify(&good).await.unwrap();
    let_background_fetch_finish().await;
    assert_eq!(fake.calls(), 2, "the failed fetch is rate-limited too");
    tokio::time::advance(Duration::from_secs(11)).await;
    verifier.verify(&good).await.unwrap();
    let_background_fetch_finish().await;
    assert_eq!(fake.calls(), 3, "and retried after the interval");
}

#[tokio::test(start_paused = true)]
async fn withdrawn_keys_stop_working_once_refetched() {
    let fake = Fake::new([Ok(jwks(&["rsa1"])), Ok(jwks(&["rsa2"]))]);
    let verifier = verifier(&fake);
    let old = token("rsa1", RSA1);
    verifier.verify(&old).await.unwrap();
    tokio::time::advance(Duration::from_secs(3601)).await;
    // This request still passes with the old set, and starts its refresh.
    verifier.verify(&old).await.unwrap();
    let_background_fetch_finish().await;
    let error = verifier.verify(&old).await.unwrap_err();
    assert_eq!(error.kind(), TokenErrorKind::Invalid);
    verifier.verify(&token("rsa2", RSA2)).await.unwrap();
    assert_eq!(fake.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn without_any_key_the_verifier_is_unavailable() {
    let fake = Fake::new([Err(JwksErrorKind::Status { status: 500 })]);
    let verifier = verifier(&fake);
    let error = verifier.verify(&token("rsa1", RSA1)).await.unwrap_err();
    assert_eq!(error.kind(), TokenErrorKind::Unavailable);
    assert_eq!(
        std::error::Error::source(&error).unwrap().to_string(),
        "jwks answered with status 500"
    );
    // Rate-limited: no second fetch, still unavailable.
    let error = verifier.verify(&token("rsa1", RSA1)).await.unwrap_err();
    assert_eq!(error.kind(), TokenErrorKind::Unavailable);
    assert_eq!(fake.calls(), 1);
    assert_eq!(
        verifier.refresh().await.unwrap_err().kind(),
        JwksErrorKind::Status { status: 500 }
    );
}

#[tokio::test(start_paused = true)]
async fn a_token_without_kid_uses_the_only_key() {
    let fake = Fake::new([Ok(jwks(&["rsa1"]))]);
    let verifier = verifier(&fake);
    let claims = serde_json::json!({
        "sub": "alice", "iss": ISSUER, "aud": [RESOURCE, "other"], "exp": now() + 300,
        "scp": "a b", "azp": "cli",
    });
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::RS256),
        &claims,
        &EncodingKey::from_rsa_pem(RSA1).unwrap(),
    )
    .unwrap();
    let principal = verifier.verify(&token).await.unwrap();
    assert_eq!(principal.scopes, ["a", "b"]);
    assert_eq!(principal.client_id.as_deref(), Some("cli"));
    assert_eq!(principal.audience, [RESOURCE, "other"]);
    // With two keys, a token without kid matches none.
    let fake = Fake::new([Ok(jwks(&["rsa1", "rsa2"]))]);
    let error = self::verifier(&fake).verify(&token).await.unwrap_err();
    assert_eq!(error.kind(), TokenErrorKind::Invalid);
}

#[test]
fn jwks_urls_must_be_https_or_loopback() {
    let build = |url: &str| {
        JwtVerifier::builder(ISSUER, url, RESOURCE)
            .build()
            .map(|_| ())
    };
    assert_eq!(
        build("http://auth.example.com/jwks"),
        Err(ConfigError::InsecureJwksUrl)
    );
    assert_eq!(
        build("auth.example.com/jwks"),
        Err(ConfigError::InvalidJwksUrl)
    );
    assert_eq!(
        build("ftp://auth.example.com/jwks"),
        Err(ConfigError::InvalidJwksUrl)
    );
    assert!(build("https://auth.example.com/jwks").is_ok());
    assert!(build("http://127.0.0.1:9/jwks").is_ok());
    assert!(build("http://localhost:9/jwks").is_ok());
    assert!(build("http://[::1]:9/jwks").is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_dpop_bound_token_reports_its_key() {
    let fake = Fake::new([Ok(jwks(&["rsa1"]))]);
    let verifier = verifier(&fake);
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa1".to_owned());
    let claims = serde_json::json!({
        "sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 300,
        "cnf": {"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"},
    });
    let key = EncodingKey::from_rsa_pem(RSA1).unwrap();
    let bound = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    let principal = verifier.verify(&bound).await.unwrap();
    assert_eq!(
        principal.jkt.as_deref(),
        Some("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
    );
    let plain = verifier.verify(&token("rsa1", RSA1)).await.unwrap();
    assert_eq!(plain.jkt, None);
}
