//! One request through the guard's layer: with a bearer JWT, and with a DPoP-bound JWT and its
//! proof (ES256), each with the guard's caches on (the steady state: a client sends the same
//! token and the same key again and again) and off (the first request of a client).
//!
//! The token is an RS256 JWT checked by a verifier that does what `JwtVerifier` does once it
//! holds the key (signature, `iss`, `aud`, `exp`), without a key set on the network. Each DPoP
//! request gets a proof of its own, signed outside the measurement: the replay cache refuses a
//! proof twice, as it should.
//!
//! `cargo bench -p mcp-streamable-auth --features dpop --bench guard`

use std::{
    convert::Infallible,
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use http::{Request, Response};
use http_body_util::Full;
use jsonwebtoken::{
    Algorithm, DecodingKey, EncodingKey, Header, Validation,
    jwk::{Jwk, ThumbprintHash},
};
use mcp_streamable_auth::{
    Guard, Principal, RequireBearer, TokenError, TokenErrorKind, TokenVerifier, VerifyFuture, dpop,
};
use serde_json::json;
use sha2::{Digest, Sha256};
use tower::{Layer, ServiceExt, service_fn, util::BoxCloneService};

const ISSUER: &str = "https://auth.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const RSA1: &[u8] = include_bytes!("../tests/fixtures/rsa1.pem");
const EC1: &[u8] = include_bytes!("../tests/fixtures/ec1.pem");
const PUBLIC: &str = include_str!("../tests/fixtures/public.json");

/// An RS256 JWT verifier with its key at hand.
struct Jwt {
    key: DecodingKey,
    validation: Validation,
}

impl Jwt {
    fn new() -> Jwt {
        let public: serde_json::Value = serde_json::from_str(PUBLIC).unwrap();
        let jwk: Jwk = serde_json::from_value(public["rsa1"].clone()).unwrap();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[RESOURCE]);
        Jwt {
            key: DecodingKey::from_jwk(&jwk).unwrap(),
            validation,
        }
    }
}

#[derive(serde::Deserialize)]
struct Claims {
    sub: String,
    cnf: Option<Cnf>,
}

#[derive(serde::Deserialize)]
struct Cnf {
    jkt: String,
}

impl TokenVerifier for Jwt {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            let data = jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation)
                .map_err(|e| TokenError::new(TokenErrorKind::Invalid).with_source(e))?;
            let principal = Principal::new(data.claims.sub).with_scopes(["mcp"]);
            Ok(match data.claims.cnf {
                Some(cnf) => principal.with_jkt(cnf.jkt),
                None => principal,
            })
        })
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn access_token(jkt: Option<&str>) -> String {
    let mut claims = json!({"sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 3600});
    if let Some(jkt) = jkt {
        claims["cnf"] = json!({ "jkt": jkt });
    }
    let key = EncodingKey::from_rsa_pem(RSA1).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &key).unwrap()
}

/// The client's DPoP key and a fresh proof for each request.
struct Prover {
    key: EncodingKey,
    header: Header,
    jkt: String,
    next: AtomicU64,
}

impl Prover {
    fn new() -> Prover {
        let key = EncodingKey::from_ec_pem(EC1).unwrap();
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(jwk.clone());
        Prover {
            key,
            header,
            jkt: jwk.thumbprint(ThumbprintHash::SHA256).unwrap(),
            next: AtomicU64::new(0),
        }
    }

    fn proof(&self, token: &str) -> String {
        let claims = json!({
            "jti": format!("bench-{}", self.next.fetch_add(1, Ordering::Relaxed)),
            "htm": "POST",
            "htu": RESOURCE,
            "iat": now(),
            "ath": URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())),
        });
        jsonwebtoken::encode(&self.header, &claims, &self.key).unwrap()
    }
}

type Inner = BoxCloneService<Request<Full<Bytes>>, Response<Full<Bytes>>, Infallible>;

fn service(cached: bool) -> RequireBearer<Inner> {
    let mut dpop = dpop::Config::default();
    if !cached {
        dpop = dpop.cached_keys(0);
    }
    let guard = Guard::builder(RESOURCE)
        .authorization_server(ISSUER)
        .required_scopes(["mcp"])
        .cached_tokens(if cached { 1024 } else { 0 })
        .dpop(dpop)
        .build(Jwt::new())
        .unwrap();
    let inner = service_fn(|_: Request<Full<Bytes>>| async {
        Ok::<_, Infallible>(Response::new(Full::default()))
    });
    guard.layer().layer(BoxCloneService::new(inner))
}

fn request(authorization: &str, proof: Option<String>) -> Request<Full<Bytes>> {
    let mut request = Request::post("/mcp").header("authorization", authorization);
    if let Some(proof) = proof {
        request = request.header("dpop", proof);
    }
    request.body(Full::default()).unwrap()
}

fn guard(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let prover = Prover::new();
    let bearer = access_token(None);
    let bound = access_token(Some(&prover.jkt));
    let mut group = c.benchmark_group("guard");
    group.measurement_time(Duration::from_secs(5));
    for cached in [true, false] {
        let caches = if cached { "cached" } else { "uncached" };
        let service = service(cached);
        let authorization = format!("Bearer {bearer}");
        group.bench_function(format!("bearer_jwt/{caches}"), |b| {
            b.iter_batched(
                || request(&authorization, None),
                |request| {
                    let response = runtime.block_on(service.clone().oneshot(request)).unwrap();
                    assert_eq!(response.status(), 200);
                },
                BatchSize::SmallInput,
            );
        });
        let authorization = format!("DPoP {bound}");
        group.bench_function(format!("dpop_jwt_and_proof/{caches}"), |b| {
            b.iter_batched(
                || request(&authorization, Some(prover.proof(&bound))),
                |request| {
                    let response = runtime.block_on(service.clone().oneshot(request)).unwrap();
                    assert_eq!(response.status(), 200);
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, guard);
criterion_main!(benches);
