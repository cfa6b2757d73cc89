//! DPoP (RFC 9449) against the guard, through its tower layer, without sockets: clients that
//! sign proofs with the fixture keys, a verifier that knows a few tokens, and the table of
//! refusals in `rows.rs`, one test a row.

mod nonces;
mod rows;

use std::{
    collections::HashMap,
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk, jwk::ThumbprintHash};
use mcp_streamable_auth::{
    Guard, Principal, RequireBearer, TokenError, TokenErrorKind, TokenVerifier, VerifyFuture, dpop,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tower::{Layer, ServiceExt, service_fn, util::BoxCloneService};

const RESOURCE: &str = "https://mcp.example.com/mcp";
const HTU: &str = "https://mcp.example.com/mcp";
const METADATA: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const ALGS: &str = "ES256 ES384 EdDSA PS256 RS256";
const EC1: &[u8] = include_bytes!("../../fixtures/ec1.pem");
const EC2: &[u8] = include_bytes!("../../fixtures/ec2.pem");
const RSA1: &[u8] = include_bytes!("../../fixtures/rsa1.pem");
const ED1: &[u8] = include_bytes!("../../fixtures/ed1.pem");

/// A client's DPoP key: signs proofs with its public key in the header.
struct Client {
    alg: Algorithm,
    key: EncodingKey,
    jwk: Jwk,
}

impl Client {
    fn new(alg: Algorithm, pem: &[u8]) -> Client {
        let key = match alg {
            Algorithm::ES256 => EncodingKey::from_ec_pem(pem),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
            _ => EncodingKey::from_rsa_pem(pem),
        }
        .unwrap();
        let jwk = Jwk::from_encoding_key(&key, alg).unwrap();
        Client { alg, key, jwk }
    }

    fn ec1() -> Client {
        Client::new(Algorithm::ES256, EC1)
    }

    fn ec2() -> Client {
        Client::new(Algorithm::ES256, EC2)
    }

    fn jkt(&self) -> String {
        self.jwk.thumbprint(ThumbprintHash::SHA256).unwrap()
    }

    /// The proof header's public key as JSON, to tamper with.
    fn jwk_json(&self) -> Value {
        serde_json::to_value(&self.jwk).unwrap()
    }

    /// A proof of `claims` with this key in a `dpop+jwt` header.
    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }

    /// A good proof for `method` and `htu`, for `token`.
    fn proof(&self, method: &str, htu: &str, token: &str) -> String {
        self.sign(&claims(method, htu, token))
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Good claims, each proof with its own `jti`.
fn claims(method: &str, htu: &str, token: &str) -> Value {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    json!({
        "jti": format!("jti-{}", NEXT.fetch_add(1, Ordering::Relaxed)),
        "htm": method,
        "htu": htu,
        "iat": now(),
        "ath": ath(token),
    })
}

fn ath(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// A JWS of `header` and `claims` with `signature`, hand-made (for `none` and HMAC).
fn raw_jws(header: &Value, claims: &Value, signature: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// Tokens by name: `bound` is bound to `ec1`'s key, `bound-rsa` to `rsa1`'s, `bound-ed` to
/// `ed1`'s, `plain` to none.
struct Tokens(HashMap<&'static str, Principal>);

impl Tokens {
    fn new() -> Tokens {
        let principal = |jkt: Option<String>| {
            let principal = Principal::new("alice")
                .with_issuer("https://auth.example.com")
                .with_scopes(["mcp"]);
            match jkt {
                Some(jkt) => principal.with_jkt(jkt),
                None => principal,
            }
        };
        Tokens(HashMap::from([
            ("bound", principal(Some(Client::ec1().jkt()))),
            (
                "bound-rsa",
                principal(Some(Client::new(Algorithm::RS256, RSA1).jkt())),
            ),
            (
                "bound-ed",
                principal(Some(Client::new(Algorithm::EdDSA, ED1).jkt())),
            ),
            ("plain", principal(None)),
        ]))
    }
}

impl TokenVerifier for Tokens {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            self.0
                .get(token)
                .cloned()
                .ok_or_else(|| TokenError::new(TokenErrorKind::Invalid))
        })
    }
}

type Inner = BoxCloneService<Request<Full<Bytes>>, Response<Full<Bytes>>, Infallible>;

/// The guarded service and how many requests reached it.
struct Server {
    service: RequireBearer<Inner>,
    reached: Arc<AtomicUsize>,
}

/// What the server answered: status, headers, body.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn challenge(&self) -> &str {
        self.headers
            .get("www-authenticate")
            .map_or("", |v| v.to_str().unwrap())
    }

    /// Asserts a 401 whose `DPoP` challenge carries `error`.
    fn assert_dpop_error(&self, error: &str) {
        assert_eq!(self.status, 401, "{}", self.challenge());
        let expected = format!(
            r#"DPoP algs="{ALGS}", resource_metadata="{METADATA}", scope="mcp", error="{error}""#
        );
        assert!(
            self.challenge().starts_with(&expected),
            "{} does not start with {expected}",
            self.challenge()
        );
    }
}

impl Server {
    fn new(config: dpop::Config) -> Server {
        let guard = Guard::builder(RESOURCE)
            .authorization_server("https://auth.example.com")
            .required_scopes(["mcp"])
            .dpop(config)
            .build(Tokens::new())
            .unwrap();
        Server::with(guard)
    }

    fn with(guard: Guard) -> Server {
        let reached = Arc::new(AtomicUsize::new(0));
        let counted = reached.clone();
        let inner = service_fn(move |request: Request<Full<Bytes>>| {
            counted.fetch_add(1, Ordering::Relaxed);
            let principal = request.extensions().get::<Principal>().cloned();
            async move {
                let jkt = principal.and_then(|p| p.jkt).unwrap_or_default();
                Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(jkt))))
            }
        });
        Server {
            service: guard.layer().layer(BoxCloneService::new(inner)),
            reached,
        }
    }

    fn reached(&self) -> usize {
        self.reached.load(Ordering::Relaxed)
    }

    async fn send(&self, request: http::request::Builder) -> Answer {
        let response = self
            .service
            .clone()
            .oneshot(request.body(Full::default()).unwrap())
            .await
            .unwrap();
        let (parts, body) = response.into_parts();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }

    /// A POST to `/mcp` with `Authorization: DPoP token` and `proofs` as `DPoP` headers.
    async fn dpop(&self, token: &str, proofs: &[&str]) -> Answer {
        let mut request = Request::post("/mcp").header("authorization", format!("DPoP {token}"));
        for proof in proofs {
            request = request.header("dpop", *proof);
        }
        self.send(request).await
    }
}
