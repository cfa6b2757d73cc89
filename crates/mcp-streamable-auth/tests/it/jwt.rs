//! The JWT verifier against a key set served by the test on 127.0.0.1 (an OS-picked port), and
//! through the guard and the layer.

use std::{
    convert::Infallible,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64_url::encode as b64;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::rt::{TokioExecutor, TokioIo};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_streamable_auth::{
    Guard, JwksErrorKind, Principal, RefusalKind, TokenErrorKind, TokenVerifier, jwt::JwtVerifier,
};
use serde_json::json;
use tokio::net::TcpListener;
use tower::{Layer, ServiceExt};

mod base64_url {
    /// Unpadded base64url, enough to hand-craft a token.
    pub(super) fn encode(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..=chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            }
        }
        out
    }
}

const ISSUER: &str = "https://auth.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const RSA1: &[u8] = include_bytes!("../fixtures/rsa1.pem");
const RSA2: &[u8] = include_bytes!("../fixtures/rsa2.pem");
const EC1: &[u8] = include_bytes!("../fixtures/ec1.pem");
const PUBLIC: &str = include_str!("../fixtures/public.json");

/// A JWKS endpoint on the loopback: serves whatever `document` holds, with `status`, and counts
/// the requests.
struct Jwks {
    url: String,
    document: Arc<Mutex<(u16, String)>>,
    hits: Arc<AtomicUsize>,
}

impl Jwks {
    async fn start(names: &[&str]) -> Jwks {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let document = Arc::new(Mutex::new((200, key_set(names))));
        let hits = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (document.clone(), hits.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (served, counted) = (served.clone(), counted.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |_request: Request<Incoming>| {
                        counted.fetch_add(1, Ordering::SeqCst);
                        let (status, body) = served.lock().unwrap().clone();
                        async move {
                            let mut response = Response::new(Full::new(Bytes::from(body)));
                            *response.status_mut() = StatusCode::from_u16(status).unwrap();
                            Ok::<_, Infallible>(response)
                        }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Jwks {
            url,
            document,
            hits,
        }
    }

    fn serve(&self, status: u16, body: String) {
        *self.document.lock().unwrap() = (status, body);
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn verifier(&self) -> JwtVerifier {
        JwtVerifier::builder(ISSUER, &self.url, RESOURCE)
            .min_refresh_interval(Duration::ZERO)
            .fetch_timeout(Duration::from_secs(5))
            .build()
            .unwrap()
    }
}

/// The key set of the fixture keys `names`, each with its name as `kid`.
fn key_set(names: &[&str]) -> String {
    let public: serde_json::Value = serde_json::from_str(PUBLIC).unwrap();
    let keys: Vec<_> = names
        .iter()
        .map(|name| {
            let mut key = public[*name].clone();
            key["kid"] = (*name).into();
            key["use"] = "sig".into();
            key
        })
        .collect();
    json!({ "keys": keys }).to_string()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims() -> serde_json::Value {
    json!({
        "sub": "alice",
        "iss": ISSUER,
        "aud": RESOURCE,
        "exp": now() + 300,
        "iat": now(),
        "scope": "mcp:read mcp:write",
        "client_id": "cli",
    })
}

fn sign(alg: Algorithm, kid: &str, claims: &serde_json::Value) -> String {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(EC1).unwrap(),
        _ if kid == "rsa2" => EncodingKey::from_rsa_pem(RSA2).unwrap(),
        _ => EncodingKey::from_rsa_pem(RSA1).unwrap(),
    };
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

fn with(mut claims: serde_json::Value, key: &str, value: serde_json::Value) -> serde_json::Value {
    if value.is_null() {
        claims.as_object_mut().unwrap().remove(key);
    } else {
        claims[key] = value;
    }
    claims
}

async fn kind(verifier: &JwtVerifier, token: &str) -> TokenErrorKind {
    verifier.verify(token).await.unwrap_err().kind()
}

#[tokio::test]
async fn a_good_token_gives_its_principal() {
    let jwks = Jwks::start(&["rsa1", "ec1"]).await;
    let verifier = jwks.verifier();
    let principal = verifier
        .verify(&sign(Algorithm::RS256, "rsa1", &claims()))
        .await
        .unwrap();
    assert_eq!(principal.subject, "alice");
    assert_eq!(principal.issuer.as_deref(), Some(ISSUER));
    assert_eq!(principal.client_id.as_deref(), Some("cli"));
    assert_eq!(principal.scopes, ["mcp:read", "mcp:write"]);
    assert_eq!(principal.audience, [RESOURCE]);
    assert!(principal.expires_at.unwrap() > SystemTime::now());
    let es = sign(
        Algorithm::ES256,
        "ec1",
        &with(claims(), "scope", json!(null)),
    );
    let principal = verifier.verify(&es).await.unwrap();
    assert!(principal.scopes.is_empty());
    let ps = sign(
        Algorithm::PS256,
        "rsa1",
        &with(claims(), "scp", json!(["x", "y"])),
    );
    assert_eq!(
        verifier.verify(&ps).await.unwrap().scopes,
        ["mcp:read", "mcp:write", "x", "y"]
    );
    assert_eq!(jwks.hits(), 1, "one fetch serves every token");
}

#[tokio::test]
async fn key_rotation_is_picked_up_by_the_unknown_kid() {
    let jwks = Jwks::start(&["rsa1"]).await;
    let verifier = jwks.verifier();
    assert_eq!(verifier.refresh().await.unwrap(), 1);
    verifier
        .verify(&sign(Algorithm::RS256, "rsa1", &claims()))
        .await
        .unwrap();
    assert_eq!(jwks.hits(), 1);
    jwks.serve(200, key_set(&["rsa2"]));
    let principal = verifier
        .verify(&sign(Algorithm::RS256, "rsa2", &claims()))
        .await
        .unwrap();
    assert_eq!(principal.subject, "alice");
    assert_eq!(jwks.hits(), 2, "the unknown kid refetched the set");
    assert_eq!(verifier.key_count(), 1);
    // The withdrawn key is gone with the old set.
    let old = sign(Algorithm::RS256, "rsa1", &claims());
    assert_eq!(kind(&verifier, &old).await, TokenErrorKind::Invalid);
}

#[tokio::test]
async fn a_flood_of_made_up_kids_costs_one_fetch_per_interval() {
    let jwks = Jwks::start(&["rsa1"]).await;
    let verifier = JwtVerifier::builder(ISSUER, &jwks.url, RESOURCE)
        .min_refresh_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    verifier.refresh().await.unwrap();
    for i in 0..50 {
        let token = sign(Algorithm::RS256, &format!("bogus-{i}"), &claims());
        assert_eq!(kind(&verifier, &token).await, TokenErrorKind::Invalid);
    }
    assert_eq!(jwks.hits(), 1);
}

#[tokio::test]
async fn claims_that_refuse_the_token() {
    let jwks = Jwks::start(&["rsa1"]).await;
    let verifier = jwks.verifier();
    let rows = [
        (
            "expired",
            with(claims(), "exp", json!(now() - 120)),
            TokenErrorKind::Expired,
        ),
        (
            "wrong aud",
            with(claims(), "aud", json!("https://mcp.example.com/mcp/")),
            TokenErrorKind::WrongAudience,
        ),
        (
            "other aud",
            with(claims(), "aud", json!(["https://other.example.com"])),
            TokenErrorKind::WrongAudience,
        ),
        (
            "no aud",
            with(claims(), "aud", json!(null)),
            TokenErrorKind::WrongAudience,
        ),
        (
            "wrong iss",
            with(claims(), "iss", json!("https://evil.example.com")),
            TokenErrorKind::Invalid,
        ),
        (
            "no iss",
            with(claims(), "iss", json!(null)),
            TokenErrorKind::Invalid,
        ),
        (
            "no sub",
            with(claims(), "sub", json!(null)),
            TokenErrorKind::Invalid,
        ),
        (
            "no exp",
            with(claims(), "exp", json!(null)),
            TokenErrorKind::Invalid,
        ),
        (
            "not yet",
            with(claims(), "nbf", json!(now() + 600)),
            TokenErrorKind::Invalid,
        ),
    ];
    for (label, claims, expected) in rows {
        let token = sign(Algorithm::RS256, "rsa1", &claims);
        assert_eq!(kind(&verifier, &token).await, expected, "{label}");
    }
    // Within the leeway, an expired token still passes.
    let token = sign(
        Algorithm::RS256,
        "rsa1",
        &with(claims(), "exp", json!(now() - 5)),
    );
    verifier.verify(&token).await.unwrap();
}

#[tokio::test]
async fn forged_tokens_are_refused() {
    let jwks = Jwks::start(&["rsa1"]).await;
    let verifier = jwks.verifier();
    let payload = b64(claims().to_string().as_bytes());

    // HS256 "signed" with the RSA key's public material: the classic algorithm confusion.
    let public: serde_json::Value = serde_json::from_str(PUBLIC).unwrap();
    let secret = public["rsa1"]["n"].as_str().unwrap().as_bytes();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("rsa1".into());
    let hs = jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(secret)).unwrap();
    assert_eq!(kind(&verifier, &hs).await, TokenErrorKind::Invalid, "HS256");
    let pem_secret = EncodingKey::from_secret(RSA1);
    let hs = jsonwebtoken::encode(&header, &claims(), &pem_secret).unwrap();
    assert_eq!(
        kind(&verifier, &hs).await,
        TokenErrorKind::Invalid,
        "HS256 pem"
    );

    // `none`, with and without a signature part.
    let none = b64(br#"{"alg":"none","kid":"rsa1","typ":"JWT"}"#);
    for token in [format!("{none}.{payload}."), format!("{none}.{payload}")] {
        assert_eq!(
            kind(&verifier, &token).await,
            TokenErrorKind::Invalid,
            "{token}"
        );
    }

    // A good token with its claims swapped, or signed by a key not in the set.
    let good = sign(Algorithm::RS256, "rsa1", &claims());
    let signature = good.rsplit('.').next().unwrap();
    let header = good.split('.').next().unwrap();
    let swapped = b64(with(claims(), "sub", json!("mallory"))
        .to_string()
        .as_bytes());
    let tampered = format!("{header}.{swapped}.{signature}");
    assert_eq!(
        kind(&verifier, &tampered).await,
        TokenErrorKind::Invalid,
        "tampered"
    );
    let other_key = {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("rsa1".into());
        jsonwebtoken::encode(
            &header,
            &claims(),
            &EncodingKey::from_rsa_pem(RSA2).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        kind(&verifier, &other_key).await,
        TokenErrorKind::Invalid,
        "other key"
    );
    for garbage in ["", "a.b.c", "not-a-jwt"] {
        assert_eq!(
            kind(&verifier, garbage).await,
            TokenErrorKind::Invalid,
            "{garbage}"
        );
    }
}

#[tokio::test]
async fn a_broken_key_set_makes_the_verifier_unavailable() {
    let jwks = Jwks::start(&["rsa1"]).await;
    jwks.serve(500, "oops".into());
    let verifier = jwks.verifier();
    let token = sign(Algorithm::RS256, "rsa1", &claims());
    assert_eq!(kind(&verifier, &token).await, TokenErrorKind::Unavailable);
    assert_eq!(
        verifier.refresh().await.unwrap_err().kind(),
        JwksErrorKind::Status { status: 500 }
    );
    jwks.serve(200, "x".repeat(100));
    let small = JwtVerifier::builder(ISSUER, &jwks.url, RESOURCE)
        .max_document_bytes(64)
        .build()
        .unwrap();
    assert_eq!(
        small.refresh().await.unwrap_err().kind(),
        JwksErrorKind::TooLarge
    );
    jwks.serve(
        200,
        r#"{"keys":[{"kty":"oct","kid":"rsa1","k":"c2VjcmV0"}]}"#.into(),
    );
    assert_eq!(
        verifier.refresh().await.unwrap_err().kind(),
        JwksErrorKind::NoUsableKeys
    );
    // Back to a good set: the verifier recovers.
    jwks.serve(200, key_set(&["rsa1"]));
    verifier.verify(&token).await.unwrap();
}

#[tokio::test]
async fn an_unreachable_key_set_times_out_or_fails() {
    // A listener that accepts and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    let verifier = JwtVerifier::builder(ISSUER, &url, RESOURCE)
        .fetch_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let error = verifier.refresh().await.unwrap_err();
    assert_eq!(error.kind(), JwksErrorKind::Timeout);
    drop(listener);
}

#[tokio::test]
async fn through_the_guard_and_the_layer() {
    let jwks = Jwks::start(&["rsa1"]).await;
    let guard = Guard::builder(RESOURCE)
        .authorization_server(ISSUER)
        .scopes_supported(["mcp:read", "mcp:write", "mcp:admin"])
        .required_scopes(["mcp:read", "mcp:admin"])
        .build(jwks.verifier())
        .unwrap();
    let inner = tower::service_fn(|request: Request<Full<Bytes>>| async move {
        let principal = request.extensions().get::<Principal>().cloned().unwrap();
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(principal.subject))))
    });
    let service = guard.layer().layer(inner);
    let call = |token: String| {
        let service = service.clone();
        async move {
            let request = Request::post("/mcp")
                .header("authorization", format!("Bearer {token}"))
                .body(Full::default())
                .unwrap();
            service.oneshot(request).await.unwrap()
        }
    };

    let narrow = sign(Algorithm::RS256, "rsa1", &claims());
    let response = call(narrow.clone()).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        response.headers()["www-authenticate"],
        concat!(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", "#,
            r#"scope="mcp:read mcp:admin", error="insufficient_scope", "#,
            r#"error_description="the access token lacks a required scope""#
        )
    );
    let refusal = guard
        .check(&{
            let mut headers = http::HeaderMap::new();
            headers.insert("authorization", format!("Bearer {narrow}").parse().unwrap());
            headers
        })
        .await
        .unwrap_err();
    assert_eq!(refusal.kind(), RefusalKind::InsufficientScope);

    let expired = sign(
        Algorithm::RS256,
        "rsa1",
        &with(claims(), "exp", json!(now() - 120)),
    );
    let response = call(expired).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(
        response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .ends_with(r#"error="invalid_token", error_description="the access token expired""#)
    );

    let wide = sign(
        Algorithm::RS256,
        "rsa1",
        &with(claims(), "scope", json!("mcp:read mcp:admin")),
    );
    let response = call(wide).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "alice");
}

/// Serves the key set from memory, counting the requests: an application's own client.
#[derive(Debug)]
struct Canned {
    document: String,
    sent: AtomicUsize,
}

impl mcp_http_client::HttpClient for Canned {
    fn send(&self, request: Request<Bytes>) -> mcp_http_client::ResponseFuture<'_> {
        assert_eq!(request.uri(), "https://auth.example.com/jwks.json");
        self.sent.fetch_add(1, Ordering::SeqCst);
        let body = Bytes::from(self.document.clone());
        Box::pin(async move { Ok(Response::new(body)) })
    }
}

#[tokio::test]
async fn the_key_set_is_fetched_through_the_client_given_and_held_to_the_bound() {
    let canned = Arc::new(Canned {
        document: key_set(&["rsa1", "ec1"]),
        sent: AtomicUsize::new(0),
    });
    let url = format!("{ISSUER}/jwks.json");
    let verifier = JwtVerifier::builder(ISSUER, &url, RESOURCE)
        .http_client(canned.clone())
        .build()
        .unwrap();
    assert_eq!(verifier.refresh().await.unwrap(), 2);
    let token = sign(Algorithm::RS256, "rsa1", &claims());
    verifier.verify(&token).await.unwrap();
    assert_eq!(canned.sent.load(Ordering::SeqCst), 1);

    let small = JwtVerifier::builder(ISSUER, &url, RESOURCE)
        .http_client(canned)
        .max_document_bytes(64)
        .build()
        .unwrap();
    let error = small.refresh().await.unwrap_err();
    assert_eq!(error.kind(), JwksErrorKind::TooLarge);
}
