//! `--dpop-key FILE --dpop-htu URL`: DPoP proofs (RFC 9449) for a protected server that binds
//! tokens to keys. Each POST carries `Authorization: DPoP <token>` and a fresh proof, signed
//! with the P-256 key of FILE (PKCS#8, PEM) by ring, as a client would: a new `jti`, the time,
//! the method, `htu` and the token's hash.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use http::HeaderValue;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use sha2::{Digest as _, Sha256};

/// Signs a proof per request.
#[derive(Debug)]
pub(crate) struct Prover {
    key: EcdsaKeyPair,
    random: SystemRandom,
    /// The encoded header, the same for every proof: `typ`, `alg` and the public key.
    header: String,
    htu: String,
    /// `ath`: the token's SHA-256, base64url.
    ath: String,
    next: AtomicU64,
}

impl Prover {
    /// The key of the PEM file at `path`, proving requests to `htu` with `token`.
    pub(crate) fn new(path: &str, htu: &str, token: &str) -> anyhow::Result<Prover> {
        let pem = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
        let der = pem_body(&pem).with_context(|| format!("{path}: no PEM private key"))?;
        let random = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &random)
            .map_err(|e| anyhow::anyhow!("{path}: not a P-256 PKCS#8 key: {e}"))?;
        // The public key is the uncompressed point: 0x04, x, y.
        let point = key.public_key().as_ref();
        if point.len() != 65 {
            bail!("{path}: unexpected public key");
        }
        let (x, y) = (
            URL_SAFE_NO_PAD.encode(&point[1..33]),
            URL_SAFE_NO_PAD.encode(&point[33..]),
        );
        let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "x": x, "y": y});
        let header = serde_json::json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk});
        Ok(Prover {
            key,
            random,
            header: URL_SAFE_NO_PAD.encode(header.to_string()),
            htu: htu.to_owned(),
            ath: URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())),
            next: AtomicU64::new(0),
        })
    }

    /// A fresh proof for a POST.
    pub(crate) fn proof(&self) -> anyhow::Result<HeaderValue> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let jti = format!(
            "{}-{}",
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let claims = serde_json::json!({
            "jti": jti, "htm": "POST", "htu": self.htu, "iat": now, "ath": self.ath,
        });
        let signing_input = format!(
            "{}.{}",
            self.header,
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .key
            .sign(&self.random, signing_input.as_bytes())
            .map_err(|e| anyhow::anyhow!("signing a proof: {e}"))?;
        let proof = format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        );
        Ok(HeaderValue::from_str(&proof)?)
    }
}

/// The DER inside a PEM block.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    STANDARD.decode(body).ok()
}
