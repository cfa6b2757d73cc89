//! The protected rows (`ours-bearer`, `ours-dpop`): an authorization server's part played by
//! the suite. It serves a key set (JWKS) on loopback, mints RS256 access tokens for the echo
//! server's `--auth-*` flags, and makes the P-256 key `mcp-load` signs DPoP proofs with; the
//! DPoP token is bound to that key (`cnf.jkt`).

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

/// The issuer the tokens name, and the echo server is told to trust.
const ISSUER: &str = "https://issuer.bench.test";
/// The resource (audience): its origin and path are what DPoP proofs name as `htu`.
pub(crate) const AUDIENCE: &str = "http://mcp.bench.test/mcp";
/// The auth crate's fixture RSA key, which signs the tokens, and its public half.
const RSA1: &[u8] = include_bytes!("../../../crates/mcp-streamable-auth/tests/fixtures/rsa1.pem");
const PUBLIC: &str = include_str!("../../../crates/mcp-streamable-auth/tests/fixtures/public.json");

/// What the protected rows need: the key set's URL, the tokens, the DPoP key's file.
#[derive(Debug, Clone)]
pub(crate) struct Authority {
    pub(crate) jwks_url: String,
    pub(crate) bearer_token: String,
    pub(crate) dpop_token: String,
    pub(crate) dpop_key: PathBuf,
}

impl Authority {
    /// Serves the key set on a loopback port (a thread, for the suite's lifetime), makes the
    /// DPoP key (written to `dir`) and mints the tokens, valid for a day.
    pub(crate) fn start(dir: &std::path::Path) -> anyhow::Result<Authority> {
        let jwks_url = serve_jwks()?;
        let random = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &random)
            .map_err(|e| anyhow::anyhow!("making a P-256 key: {e}"))?;
        let dpop_key = dir.join("dpop-key.pem");
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        std::fs::write(&dpop_key, pem)
            .with_context(|| format!("writing {}", dpop_key.display()))?;
        let jkt = thumbprint(pkcs8.as_ref())?;
        Ok(Authority {
            jwks_url,
            bearer_token: token(None)?,
            dpop_token: token(Some(&jkt))?,
            dpop_key,
        })
    }

    /// The echo server's flags for this authority, with `--auth-dpop` when `dpop`.
    pub(crate) fn server_args(&self, dpop: bool) -> Vec<String> {
        let mut args: Vec<String> = [
            "--auth-issuer",
            ISSUER,
            "--auth-jwks-url",
            &self.jwks_url,
            "--auth-audience",
            AUDIENCE,
            "--auth-scope",
            "mcp",
        ]
        .map(String::from)
        .to_vec();
        if dpop {
            args.push("--auth-dpop".to_owned());
        }
        args
    }

    /// The load generator's flags: the bearer token, or the DPoP token with its key.
    pub(crate) fn load_args(&self, dpop: bool) -> Vec<String> {
        if dpop {
            vec![
                "--bearer".to_owned(),
                self.dpop_token.clone(),
                "--dpop-key".to_owned(),
                self.dpop_key.display().to_string(),
                "--dpop-htu".to_owned(),
                AUDIENCE.to_owned(),
            ]
        } else {
            vec!["--bearer".to_owned(), self.bearer_token.clone()]
        }
    }
}

/// An access token for the echo server, bound to the key of thumbprint `jkt` when given.
fn token(jkt: Option<&str>) -> anyhow::Result<String> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let mut claims = serde_json::json!({
        "iss": ISSUER, "sub": "bench", "aud": AUDIENCE, "scope": "mcp",
        "client_id": "mcp-load", "iat": now, "exp": now + 86_400,
    });
    if let Some(jkt) = jkt {
        claims["cnf"] = serde_json::json!({ "jkt": jkt });
    }
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa1".into());
    let key = EncodingKey::from_rsa_pem(RSA1)?;
    Ok(jsonwebtoken::encode(&header, &claims, &key)?)
}

/// RFC 7638's SHA-256 thumbprint of the P-256 key in `pkcs8`, as `jsonwebtoken` computes it
/// (the guard's own thumbprints are its).
fn thumbprint(pkcs8: &[u8]) -> anyhow::Result<String> {
    let key = EncodingKey::from_ec_der(pkcs8);
    let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256)?;
    Ok(jwk.thumbprint(ThumbprintHash::SHA256)?)
}

/// Serves the key set of the fixture key (`kid` "rsa1") to every request, one at a time, on a
/// thread of its own; the echo server reads it once and keeps it.
fn serve_jwks() -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/jwks.json", listener.local_addr()?);
    let public: serde_json::Value = serde_json::from_str(PUBLIC)?;
    let mut key = public["rsa1"].clone();
    key["kid"] = "rsa1".into();
    key["use"] = "sig".into();
    let body = serde_json::json!({ "keys": [key] }).to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(url)
}
