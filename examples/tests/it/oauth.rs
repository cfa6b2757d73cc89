//! Issue 18 end to end: our client, authorized by `mcp_streamable_http::oauth`, against the
//! echo application protected by the JWT guard (as `echo_server --auth-*` builds it), with a
//! test authorization server in this file: discovery, registration, the authorization code
//! with PKCE through the loopback redirect (the "browser" is the test following the redirect
//! with an HTTP client), a tool call, a refresh, and a 403 step-up.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_streamable_http::client::Client;
use mcp_streamable_http::http::{self, StatusCode};
use mcp_streamable_http::jsonrpc::Notification;
use mcp_streamable_http::oauth::{Interaction, LoopbackRedirect, OAuth, Url};
use mcp_streamable_http::transport::{Connection, Sender, Transport};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::protected::{PUBLIC, RSA1, Task, WAIT, initialize, request, result_of, serve_protected};
use support::browser;

/// How long the test server's access tokens live: inside the provider's 60 s refresh margin,
/// so that the provider refreshes before each request after the first grant.
const ACCESS_TOKEN_SECONDS: u64 = 30;

/// What the test authorization server saw and holds.
#[derive(Default)]
struct AsState {
    /// code -> (client, PKCE challenge, scope granted).
    codes: HashMap<String, (String, String, String)>,
    refresh_tokens: HashMap<String, String>,
    /// The scope of each authorization request, in order.
    authorizations: Vec<String>,
    /// The grant type of each token request, in order.
    grants: Vec<String>,
    registrations: usize,
    issued: usize,
}

type Shared = Arc<Mutex<AsState>>;

/// The test authorization server: metadata, registration, authorization (approved at once;
/// the first one is granted without the `mcp` scope, as a server may grant less than asked),
/// token (codes checked against PKCE, refresh tokens rotated) and the key set.
async fn serve_authorization_server() -> (String, Shared, Task) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let state: Shared = Arc::default();
    let task = tokio::spawn({
        let (issuer, state) = (issuer.clone(), state.clone());
        async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (issuer, state) = (issuer.clone(), state.clone());
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: http::Request<Incoming>| {
                            let (issuer, state) = (issuer.clone(), state.clone());
                            async move { Ok::<_, Infallible>(answer(req, &issuer, &state).await) }
                        });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
        }
    });
    (issuer, state, Task(task))
}

async fn answer(
    req: http::Request<Incoming>,
    issuer: &str,
    state: &Shared,
) -> http::Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let query: HashMap<String, String> = form(req.uri().query().unwrap_or(""));
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let mut state = state.lock().unwrap();
    match path.as_str() {
        "/.well-known/oauth-authorization-server" => reply(
            200,
            json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "registration_endpoint": format!("{issuer}/register"),
                "jwks_uri": format!("{issuer}/jwks"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": true,
            }),
        ),
        "/jwks" => {
            let public: Value = serde_json::from_str(PUBLIC).unwrap();
            let mut key = public["rsa1"].clone();
            key["kid"] = "rsa1".into();
            reply(200, json!({"keys": [key]}))
        }
        "/register" => {
            state.registrations += 1;
            let mut metadata: Value = serde_json::from_slice(&body).unwrap();
            metadata["client_id"] = format!("client-{}", state.registrations).into();
            reply(201, metadata)
        }
        "/authorize" => {
            let scope = query.get("scope").cloned().unwrap_or_default();
            state.authorizations.push(scope.clone());
            // The first grant lacks the scope the resource needs: the client must step up.
            let granted = if state.authorizations.len() == 1 {
                "profile".into()
            } else {
                scope
            };
            let code = format!("code-{}", state.authorizations.len());
            let client = query["client_id"].clone();
            state.codes.insert(
                code.clone(),
                (client, query["code_challenge"].clone(), granted),
            );
            let mut back = Url::parse(&query["redirect_uri"]).unwrap();
            back.query_pairs_mut()
                .append_pair("code", &code)
                .append_pair("state", &query["state"])
                .append_pair("iss", issuer);
            let mut response = http::Response::new(Full::default());
            *response.status_mut() = StatusCode::FOUND;
            response
                .headers_mut()
                .insert("location", back.as_str().parse().unwrap());
            response
        }
        "/token" => token(
            &mut state,
            &form(std::str::from_utf8(&body).unwrap()),
            issuer,
        ),
        _ => reply(404, json!({"error": "not_found"})),
    }
}

fn token(
    state: &mut AsState,
    form: &HashMap<String, String>,
    issuer: &str,
) -> http::Response<Full<Bytes>> {
    let grant_type = form["grant_type"].clone();
    state.grants.push(grant_type.clone());
    let scope = match grant_type.as_str() {
        "authorization_code" => {
            let Some((client, challenge, scope)) = state.codes.remove(&form["code"]) else {
                return reply(400, json!({"error": "invalid_grant"}));
            };
            let verified = URL_SAFE_NO_PAD.encode(Sha256::digest(form["code_verifier"].as_bytes()));
            if client != form["client_id"] || verified != challenge {
                return reply(400, json!({"error": "invalid_grant"}));
            }
            scope
        }
        "refresh_token" => match state.refresh_tokens.remove(&form["refresh_token"]) {
            Some(scope) => scope,
            None => return reply(400, json!({"error": "invalid_grant"})),
        },
        _ => return reply(400, json!({"error": "unsupported_grant_type"})),
    };
    state.issued += 1;
    let refresh = format!("refresh-{}", state.issued);
    state.refresh_tokens.insert(refresh.clone(), scope.clone());
    reply(
        200,
        json!({
            "access_token": sign(issuer, &form["resource"], &scope, state.issued),
            "token_type": "Bearer",
            "expires_in": ACCESS_TOKEN_SECONDS,
            "refresh_token": refresh,
            "scope": scope,
        }),
    )
}

fn sign(issuer: &str, resource: &str, scope: &str, n: usize) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({
        "iss": issuer, "sub": "alice", "aud": resource, "scope": scope, "jti": n,
        "client_id": "test", "iat": now, "exp": now + ACCESS_TOKEN_SECONDS,
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa1".into());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_pem(RSA1).unwrap()).unwrap()
}

fn form(text: &str) -> HashMap<String, String> {
    let pairs = text
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.split_once('='));
    pairs.map(|(k, v)| (decode(k), decode(v))).collect()
}

fn decode(s: &str) -> String {
    let url = Url::parse(&format!("http://x/?v={s}")).unwrap();
    url.query_pairs()
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

fn reply(status: u16, body: Value) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    response
}

/// The user's browser: follows each authorization URL to the authorization server, then its
/// redirect to the loopback port, as a browser would.
fn browser(mut urls: mpsc::UnboundedReceiver<Url>) -> Task {
    Task(tokio::spawn(async move {
        while let Some(url) = urls.recv().await {
            let back = browser::redirect_of(&url).await.unwrap();
            let page = browser::get(&back).await.unwrap();
            assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        }
    }))
}

#[tokio::test]
async fn pkce_through_the_loopback_redirect_a_tool_call_a_refresh_and_a_step_up() {
    let (issuer, seen, _as) = serve_authorization_server().await;
    let (_, resource, stop, _server) = serve_protected(&issuer, &format!("{issuer}/jwks")).await;
    let (urls, opened) = mpsc::unbounded_channel();
    let _browser = browser(opened);
    let redirect = LoopbackRedirect::bind(move |url| urls.send(url.clone()).unwrap())
        .await
        .unwrap();
    let redirect_uri = redirect.redirect_uri().to_owned();
    let oauth = OAuth::builder(&resource)
        .authorization_code(redirect)
        .client_name("issue-18-test")
        .build()
        .unwrap();
    let client = Client::builder(&resource)
        .auth(oauth.clone())
        .build()
        .unwrap();
    let mut conn = tokio::time::timeout(WAIT, client.connect())
        .await
        .unwrap()
        .unwrap();
    let sender = conn.sender();
    // initialize: 401, discovery, registration, authorization (granted without `mcp`), 403
    // insufficient_scope, step-up authorization, accepted.
    sender.send(initialize().into()).await.unwrap();
    assert_eq!(
        result_of(&mut conn, 0).await["protocolVersion"],
        "2025-11-25"
    );
    sender
        .send(Notification::new("notifications/initialized", None).into())
        .await
        .unwrap();
    // A tool call: the token expires within the refresh margin, so it is refreshed first.
    let call = json!({"name": "echo", "arguments": {"text": "hello, oauth"}});
    sender
        .send(request(1, "tools/call", call).into())
        .await
        .unwrap();
    let echoed = result_of(&mut conn, 1).await;
    assert_eq!(echoed["content"][0]["text"], "hello, oauth");
    tokio::time::timeout(WAIT, conn.close())
        .await
        .unwrap()
        .unwrap();
    drop(stop);
    let tokens = tokio::time::timeout(WAIT, oauth.tokens())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(tokens.scope.as_deref(), Some("mcp profile"));

    let seen = seen.lock().unwrap();
    assert_eq!(seen.registrations, 1);
    assert_eq!(seen.authorizations, ["mcp", "mcp profile"]);
    assert_eq!(
        seen.grants[..2],
        ["authorization_code", "authorization_code"]
    );
    assert!(
        seen.grants[2..].iter().all(|g| g == "refresh_token"),
        "{:?}",
        seen.grants
    );
    assert!(seen.grants.len() >= 3, "no refresh: {:?}", seen.grants);
    assert!(redirect_uri.starts_with("http://127.0.0.1:"));
    assert!(!redirect_uri.starts_with("http://127.0.0.1:0/"));
}
