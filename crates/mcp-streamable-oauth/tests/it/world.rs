//! A fake authorization server and protected resource on one loopback server, shaped by
//! [`Options`], and a "browser" that follows the authorization redirect without a user.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::HeaderValue;
use mcp_streamable_client::{AuthContext, AuthProvider};
use mcp_streamable_oauth::{BoxError, Interaction, InteractionFuture};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use crate::fake::{Fake, Reply, Seen, json, status};

/// How the fake server behaves.
#[derive(Clone)]
pub(crate) struct Options {
    /// Where the resource metadata is served (`None`: nowhere).
    pub(crate) prm_path: Option<&'static str>,
    /// The issuer's path (after the origin).
    pub(crate) issuer_path: &'static str,
    /// Where the authorization server metadata is served (`None`: nowhere).
    pub(crate) as_metadata_path: Option<&'static str>,
    /// The `issuer` the metadata claims (`None`: the real one).
    pub(crate) claimed_issuer: Option<&'static str>,
    /// The `resource` the metadata claims (`None`: the server's `/mcp`).
    pub(crate) resource: Option<&'static str>,
    pub(crate) scopes_supported: Option<Vec<&'static str>>,
    pub(crate) as_scopes_supported: Option<Vec<&'static str>>,
    pub(crate) auth_methods: Vec<&'static str>,
    pub(crate) expires_in: u64,
    /// Client ids the token endpoint answers `invalid_client` for.
    pub(crate) forgotten_clients: Vec<String>,
    /// Whether token answers carry a refresh token.
    pub(crate) refresh_tokens: bool,
    /// Whether a token request with a DPoP proof gets a DPoP token.
    pub(crate) dpop: bool,
    /// The nonce the token endpoint demands in DPoP proofs, if any.
    pub(crate) dpop_nonce: Option<&'static str>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            prm_path: Some("/.well-known/oauth-protected-resource/mcp"),
            issuer_path: "",
            as_metadata_path: Some("/.well-known/oauth-authorization-server"),
            claimed_issuer: None,
            resource: None,
            scopes_supported: None,
            as_scopes_supported: None,
            auth_methods: vec!["none"],
            expires_in: 3600,
            forgotten_clients: Vec::new(),
            refresh_tokens: true,
            dpop: false,
            dpop_nonce: None,
        }
    }
}

/// Starts the fake server.
pub(crate) async fn start(options: Options) -> Fake {
    let tokens = Arc::new(AtomicUsize::new(0));
    let clients = Arc::new(AtomicUsize::new(0));
    Fake::start(move |seen, base| route(&options, seen, base, &tokens, &clients)).await
}

/// The same world over TLS with `tls`, at `https://localhost:PORT`.
#[cfg(feature = "rustls")]
pub(crate) async fn start_tls(options: Options, tls: Arc<rustls::ServerConfig>) -> Fake {
    let tokens = Arc::new(AtomicUsize::new(0));
    let clients = Arc::new(AtomicUsize::new(0));
    let route = move |seen: &Seen, base: &str| route(&options, seen, base, &tokens, &clients);
    Fake::start_tls(route, tls).await
}

fn route(
    o: &Options,
    seen: &Seen,
    base: &str,
    tokens: &AtomicUsize,
    clients: &AtomicUsize,
) -> Reply {
    let issuer = format!("{base}{}", o.issuer_path);
    let path = seen.path();
    if Some(path) == o.prm_path {
        let resource = o.resource.map_or(format!("{base}/mcp"), str::to_owned);
        let mut prm = json!({"resource": resource, "authorization_servers": [issuer]});
        if let Some(scopes) = &o.scopes_supported {
            prm["scopes_supported"] = json!(scopes);
        }
        return json(prm);
    }
    if Some(path) == o.as_metadata_path {
        let mut metadata = json!({
            "issuer": o.claimed_issuer.map_or(issuer.clone(), str::to_owned),
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": o.auth_methods,
            "authorization_response_iss_parameter_supported": true,
        });
        if let Some(scopes) = &o.as_scopes_supported {
            metadata["scopes_supported"] = json!(scopes);
        }
        return json(metadata);
    }
    let endpoint = path.strip_prefix(o.issuer_path).unwrap_or(path);
    match endpoint {
        "/register" => {
            let n = clients.fetch_add(1, Ordering::SeqCst) + 1;
            let request: serde_json::Value = serde_json::from_str(&seen.body).unwrap();
            let mut answer = json(json!({
                "client_id": format!("client-{n}"),
                "redirect_uris": request["redirect_uris"],
                "token_endpoint_auth_method": "none",
            }));
            answer.status = 201;
            answer
        }
        "/authorize" => {
            let mut back = Url::parse(&seen.param("redirect_uri").unwrap()).unwrap();
            back.query_pairs_mut()
                .append_pair("code", "the-code")
                .append_pair("state", &seen.param("state").unwrap())
                .append_pair("iss", &issuer);
            Reply {
                status: 302,
                headers: vec![("location", back.to_string())],
                body: String::new(),
            }
        }
        "/idp/token" => {
            let n = tokens.fetch_add(1, Ordering::SeqCst) + 1;
            json(json!({
                "access_token": format!("jag-{n}"),
                "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "token_type": "N_A",
            }))
        }
        "/token" => {
            if let Some(nonce) = o.dpop_nonce
                && seen
                    .dpop
                    .as_deref()
                    .map(claims)
                    .is_some_and(|c| c["nonce"] != nonce)
            {
                let mut refused = json(json!({"error": "use_dpop_nonce"}));
                refused.status = 400;
                refused.headers.push(("dpop-nonce", nonce.into()));
                return refused;
            }
            let client = seen.param("client_id").unwrap_or_default();
            if o.forgotten_clients.contains(&client) {
                let mut refused = json(json!({"error": "invalid_client"}));
                refused.status = 401;
                return refused;
            }
            let n = tokens.fetch_add(1, Ordering::SeqCst) + 1;
            let bound = o.dpop && seen.dpop.is_some();
            let mut answer = json!({
                "access_token": format!("at-{n}"),
                "token_type": if bound { "DPoP" } else { "Bearer" },
                "expires_in": o.expires_in,
                "refresh_token": format!("rt-{n}"),
            });
            if let Some(scope) = seen.param("scope") {
                answer["scope"] = json!(scope);
            }
            if !o.refresh_tokens {
                answer.as_object_mut().unwrap().remove("refresh_token");
            }
            json(answer)
        }
        _ => status(404),
    }
}

/// The claims of a JWT, unverified.
pub(crate) fn claims(jwt: &str) -> serde_json::Value {
    use base64::Engine;
    let payload = jwt.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// A browser that follows the authorization redirect at once: GETs the URL and returns the
/// `Location` it is sent to.
#[derive(Debug)]
pub(crate) struct Browser;

/// The redirect URI the [`Browser`] registers (never listened on: it only reads `Location`).
pub(crate) const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

impl Interaction for Browser {
    fn redirect_uri(&self) -> &str {
        REDIRECT_URI
    }

    fn authorize(&self, url: Url) -> InteractionFuture<'_> {
        Box::pin(async move { location(&url).await })
    }
}

/// A [`Browser`] behind another redirect URI, as a later run's loopback port would be.
#[derive(Debug)]
pub(crate) struct BrowserAt(pub(crate) &'static str);

impl Interaction for BrowserAt {
    fn redirect_uri(&self) -> &str {
        self.0
    }

    fn authorize(&self, url: Url) -> InteractionFuture<'_> {
        Box::pin(async move { location(&url).await })
    }
}

/// GETs `url` (plain HTTP/1.1 over loopback) and returns its `Location`.
pub(crate) async fn location(url: &Url) -> Result<Url, BoxError> {
    let addr = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let target = &url[url::Position::BeforePath..];
    let request = format!("GET {target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    let location = answer
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .ok_or("no redirect")?;
    Ok(Url::parse(location.trim())?)
}

/// The context of a retry after a refusal with `status` and `challenge`.
pub(crate) fn refused(status: u16, refused: Option<&str>, challenge: &str) -> AuthContext {
    let mut context = AuthContext::default();
    context.status = Some(http::StatusCode::from_u16(status).unwrap());
    context.refused = refused.map(|r| HeaderValue::from_str(r).unwrap());
    context.challenge = Some(HeaderValue::from_str(challenge).unwrap());
    context
}

/// Asks the provider, returning the header as a string.
pub(crate) async fn ask(
    provider: &dyn AuthProvider,
    context: AuthContext,
) -> Result<Option<String>, BoxError> {
    let value = provider.authorization(context).await?;
    Ok(value.map(|v| v.to_str().unwrap().to_owned()))
}
