//! A4 and A9 with DPoP (RFC 9449): `Config::authorization` with a guard that takes
//! DPoP-bound tokens checks each request's proof, and a session started with a key stays with
//! that key: the same user with another key, or with none, finds it unknown.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_streamable_auth::{
    Guard, Principal, TokenError, TokenErrorKind, TokenVerifier, VerifyFuture, dpop,
};
use mcp_streamable_server::{Config, StreamableHttpService};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::harness::*;

const RESOURCE: &str = "http://localhost/mcp";

/// A client's DPoP key, made for the test.
struct Key {
    encoding: EncodingKey,
    jwk: Jwk,
}

impl Key {
    fn new() -> Key {
        let pair = rcgen::KeyPair::generate().unwrap();
        let encoding = EncodingKey::from_ec_der(&pair.serialize_der());
        let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).unwrap();
        Key { encoding, jwk }
    }

    fn jkt(&self) -> String {
        self.jwk.thumbprint(ThumbprintHash::SHA256).unwrap()
    }

    /// A proof for a POST to the resource with `token`.
    fn proof(&self, token: &str) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = json!({
            "jti": format!("jti-{}", NEXT.fetch_add(1, Ordering::Relaxed)),
            "htm": "POST",
            "htu": RESOURCE,
            "iat": now,
            "ath": URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())),
        });
        jsonwebtoken::encode(&header, &claims, &self.encoding).unwrap()
    }
}

/// Knows one token per key: `token-<jkt>` is alice's, bound to that key.
struct BoundTokens;

impl TokenVerifier for BoundTokens {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            let Some(jkt) = token.strip_prefix("token-") else {
                return Err(TokenError::new(TokenErrorKind::Invalid));
            };
            Ok(Principal::new("alice")
                .with_issuer("https://auth.example.com")
                .with_scopes(["mcp"])
                .with_jkt(jkt))
        })
    }
}

fn service() -> StreamableHttpService {
    let guard = Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .required_scopes(["mcp"])
        .dpop(dpop::Config::default())
        .build(BoundTokens)
        .unwrap();
    service_with(Config::default().authorization(guard), crate::app::session)
}

/// `request` with `key`'s token and a proof for it.
fn signed(mut request: Request<Full<Bytes>>, key: &Key) -> Request<Full<Bytes>> {
    let token = format!("token-{}", key.jkt());
    let headers = request.headers_mut();
    headers.insert("authorization", format!("DPoP {token}").parse().unwrap());
    headers.insert("dpop", key.proof(&token).parse().unwrap());
    request
}

#[tokio::test]
async fn a9_config_authorization_checks_dpop_proofs_and_a_session_stays_with_its_key() {
    let service = service();
    let (first, second) = (Key::new(), Key::new());
    let init = signed(
        request(post(None), initialize_body(0, "2025-11-25")),
        &first,
    );
    let response = service.handle(init).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a DPoP request through Config::authorization"
    );
    let sid = session_id(response.headers()).unwrap();
    let _ = sse_events(response, 10).await;

    let posted = signed(request(post(Some(&sid)), ping(1)), &first);
    assert_eq!(service.handle(posted).await.status(), StatusCode::OK);
    // The same user with another key: the session is not theirs.
    let posted = signed(request(post(Some(&sid)), ping(2)), &second);
    assert_eq!(service.handle(posted).await.status(), StatusCode::NOT_FOUND);
    // A proof replayed is refused.
    let posted = signed(request(post(Some(&sid)), ping(3)), &first);
    let replayed = request(post(Some(&sid)), ping(4));
    let mut replayed = replayed;
    for name in ["authorization", "dpop"] {
        let value = posted.headers()[name].clone();
        replayed.headers_mut().insert(name, value);
    }
    assert_eq!(service.handle(posted).await.status(), StatusCode::OK);
    assert_eq!(
        service.handle(replayed).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a9_a_principal_bound_to_a_key_from_a_layer_binds_its_session_to_that_key() {
    let service = crate::harness::service(Config::default());
    let as_alice = |mut r: Request<Full<Bytes>>, jkt: Option<&str>| {
        let mut alice = Principal::new("alice").with_issuer("https://auth.example.com");
        if let Some(jkt) = jkt {
            alice = alice.with_jkt(jkt);
        }
        r.extensions_mut().insert(alice);
        r
    };
    let init = request(post(None), initialize_body(0, "2025-11-25"));
    let response = service.handle(as_alice(init, Some("k1"))).await;
    let sid = session_id(response.headers()).expect("a session");
    let _ = sse_events(response, 10).await;
    for (i, (jkt, status)) in [
        (Some("k2"), StatusCode::NOT_FOUND),
        (None, StatusCode::NOT_FOUND),
        (Some("k1"), StatusCode::OK),
    ]
    .into_iter()
    .enumerate()
    {
        let posted = request(post(Some(&sid)), ping(i as i64));
        let response = service.handle(as_alice(posted, jkt)).await;
        assert_eq!(response.status(), status, "{jkt:?}");
    }
}
