//! DPoP (RFC 9449): token requests with proofs, DPoP tokens sent as such with a proof per
//! request, the authorization server's nonce, and a stored token kept with its key.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderValue, Method, Uri};
use jsonwebtoken::jwk::ThumbprintHash;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mcp_streamable_client::{AuthContext, AuthProvider, ProofContext};
use mcp_streamable_oauth::{DpopKey, MemoryStore, OAuth, TokenStore};
use sha2::{Digest, Sha256};

use crate::fake::Seen;
use crate::world::{self, Browser, Options, ask, refused};

fn provider(base: &str, key: &DpopKey) -> OAuth {
    OAuth::builder(&format!("{base}/mcp"))
        .authorization_code(Browser)
        .dpop(key.clone())
        .build()
        .unwrap()
}

fn challenge(base: &str) -> String {
    format!(r#"DPoP resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#)
}

/// A proof's claims once its signature is checked against the key it embeds, and that key's
/// thumbprint.
fn verified(proof: &str) -> (serde_json::Value, String) {
    let header = jsonwebtoken::decode_header(proof).unwrap();
    assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
    assert_eq!(header.alg, Algorithm::ES256);
    let jwk = header.jwk.unwrap();
    let key = DecodingKey::from_jwk(&jwk).unwrap();
    let mut validation = Validation::new(Algorithm::ES256);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    let claims = jsonwebtoken::decode::<serde_json::Value>(proof, &key, &validation)
        .unwrap()
        .claims;
    (claims, jwk.thumbprint(ThumbprintHash::SHA256).unwrap())
}

fn token_requests(log: &[Seen]) -> Vec<&Seen> {
    log.iter().filter(|s| s.path() == "/token").collect()
}

/// The provider's proof for a request with `method` to `url` carrying `authorization`.
fn proof(oauth: &OAuth, method: &Method, url: &str, authorization: &str) -> Option<String> {
    let uri: Uri = url.parse().unwrap();
    let authorization = HeaderValue::from_str(authorization).unwrap();
    let nonce = HeaderValue::from_static("rs-nonce");
    let context = ProofContext::new(method, &uri, Some(&authorization), Some(&nonce));
    let proof = oauth.proof(&context).unwrap()?;
    Some(proof.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_dpop_provider_proves_its_key_at_the_token_endpoint_and_on_each_request() {
    let server = world::start(Options {
        dpop: true,
        ..Options::default()
    })
    .await;
    let key = DpopKey::generate().unwrap();
    let oauth = provider(&server.url, &key);
    let ctx = refused(401, None, &challenge(&server.url));
    assert_eq!(
        ask(&oauth, ctx).await.unwrap().as_deref(),
        Some("DPoP at-1")
    );

    let log = server.log();
    let token = token_requests(&log)[0];
    let (claims, thumbprint) = verified(token.dpop.as_deref().unwrap());
    assert_eq!(thumbprint, key.thumbprint());
    assert_eq!(claims["htm"], "POST");
    assert_eq!(claims["htu"], format!("{}/token", server.url));
    assert!(claims.get("ath").is_none() && claims.get("nonce").is_none());
    let held = oauth.tokens().await.unwrap().unwrap();
    assert_eq!(
        held.dpop_key.as_ref().unwrap().thumbprint(),
        key.thumbprint()
    );

    // Each request gets a proof of its own, bound to the token it carries.
    let url = format!("{}/mcp?x=1", server.url);
    let first = proof(&oauth, &Method::POST, &url, "DPoP at-1").unwrap();
    let second = proof(&oauth, &Method::GET, &url, "DPoP at-1").unwrap();
    let (first, signer) = verified(&first);
    let (second, _) = verified(&second);
    assert_eq!(signer, key.thumbprint());
    assert_eq!(first["htm"], "POST");
    assert_eq!(second["htm"], "GET");
    assert_eq!(first["htu"], format!("{}/mcp", server.url));
    assert_eq!(
        first["ath"],
        URL_SAFE_NO_PAD.encode(Sha256::digest(b"at-1"))
    );
    assert_eq!(first["nonce"], "rs-nonce");
    assert_ne!(first["jti"], second["jti"]);
    // A bearer token gets no proof.
    assert_eq!(proof(&oauth, &Method::POST, &url, "Bearer at-1"), None);
    assert!(!format!("{oauth:?}").contains("PRIVATE"));
}

#[tokio::test]
async fn the_token_endpoints_use_dpop_nonce_is_answered_with_its_nonce_once() {
    let server = world::start(Options {
        dpop: true,
        dpop_nonce: Some("as-nonce"),
        ..Options::default()
    })
    .await;
    let oauth = provider(&server.url, &DpopKey::generate().unwrap());
    let ctx = refused(401, None, &challenge(&server.url));
    assert_eq!(
        ask(&oauth, ctx).await.unwrap().as_deref(),
        Some("DPoP at-1")
    );
    let log = server.log();
    let tries = token_requests(&log);
    assert_eq!(tries.len(), 2);
    let (first, _) = verified(tries[0].dpop.as_deref().unwrap());
    let (second, _) = verified(tries[1].dpop.as_deref().unwrap());
    assert!(first.get("nonce").is_none());
    assert_eq!(second["nonce"], "as-nonce");
    assert_ne!(first["jti"], second["jti"]);
    assert_eq!(tries[0].param("code"), tries[1].param("code"));
}

#[tokio::test]
async fn a_bearer_answer_to_a_dpop_request_is_used_as_a_bearer_token() {
    let server = world::start(Options::default()).await;
    let oauth = provider(&server.url, &DpopKey::generate().unwrap());
    let ctx = refused(401, None, &challenge(&server.url));
    assert_eq!(
        ask(&oauth, ctx).await.unwrap().as_deref(),
        Some("Bearer at-1")
    );
    assert!(token_requests(&server.log())[0].dpop.is_some());
    let held = oauth.tokens().await.unwrap().unwrap();
    assert!(held.dpop_key.is_none());
    let url = format!("{}/mcp", server.url);
    assert_eq!(proof(&oauth, &Method::POST, &url, "Bearer at-1"), None);
}

#[tokio::test]
async fn a_stored_dpop_token_is_used_and_refreshed_with_its_own_key() {
    let server = world::start(Options {
        dpop: true,
        ..Options::default()
    })
    .await;
    let store: Arc<MemoryStore> = Arc::new(MemoryStore::new());
    let first_key = DpopKey::generate().unwrap();
    let first = OAuth::builder(&format!("{}/mcp", server.url))
        .authorization_code(Browser)
        .dpop(first_key.clone())
        .store(store.clone())
        .build()
        .unwrap();
    let ctx = refused(401, None, &challenge(&server.url));
    assert_eq!(
        ask(&first, ctx).await.unwrap().as_deref(),
        Some("DPoP at-1")
    );
    // The store keeps the key with the token, through serde as a file would.
    let resource = format!("{}/mcp", server.url);
    let stored = store.tokens(&resource).await.unwrap().unwrap();
    let json = serde_json::to_string(&stored).unwrap();
    let read: mcp_streamable_oauth::Tokens = serde_json::from_str(&json).unwrap();
    let key = read.dpop_key.as_ref().unwrap();
    assert_eq!(key.thumbprint(), first_key.thumbprint());
    assert!(!format!("{read:?}").contains("PRIVATE"));

    // A later run with another key uses the stored token with the stored key...
    let later = OAuth::builder(&resource)
        .authorization_code(Browser)
        .dpop(DpopKey::generate().unwrap())
        .store(store.clone())
        .build()
        .unwrap();
    let sent = ask(&later, AuthContext::default()).await.unwrap();
    assert_eq!(sent.as_deref(), Some("DPoP at-1"));
    let signed = proof(&later, &Method::POST, &resource, "DPoP at-1").unwrap();
    assert_eq!(verified(&signed).1, first_key.thumbprint());
    // ...and refreshes it with that key, as the refresh token is bound to it.
    let ctx = refused(401, Some("DPoP at-1"), &challenge(&server.url));
    assert_eq!(
        ask(&later, ctx).await.unwrap().as_deref(),
        Some("DPoP at-2")
    );
    let log = server.log();
    let refresh = token_requests(&log)[1];
    assert_eq!(
        refresh.param("grant_type").as_deref(),
        Some("refresh_token")
    );
    assert_eq!(
        verified(refresh.dpop.as_deref().unwrap()).1,
        first_key.thumbprint()
    );
}
