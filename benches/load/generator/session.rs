//! One MCP session over one HTTP/1.1 connection (plain hyper, `TCP_NODELAY`): `initialize`,
//! `notifications/initialized`, then requests, each answered in JSON or SSE. Or, against a
//! per-request target (2026-07-28), no session at all: each request on the connection stands
//! alone, carrying its `_meta` and mirrored headers (`per_request.rs`).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, bail, ensure};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use mcp_jsonrpc::Response;
use mcp_streamable_protocol::headers::{MCP_METHOD, MCP_NAME};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::dpop::Prover;
use super::per_request;
use super::reply;
use crate::measure::Kind;

/// The protocol version the load generator asks for: one every server under test speaks.
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The headers mirroring `lookup`'s two arguments (the echo server's tool declares them).
const PARAM_REGION: HeaderName = HeaderName::from_static("mcp-param-region");
const PARAM_KEY: HeaderName = HeaderName::from_static("mcp-param-key");

/// Where the server is: the address to connect to and the `Host` and path to ask for.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `host:port`, for `connect` and the `Host` header.
    authority: String,
    host: HeaderValue,
    path: String,
    /// `Authorization: Bearer <token>` (or `DPoP <token>`) on every request, for a protected
    /// server.
    authorization: Option<HeaderValue>,
    /// A fresh DPoP proof on every POST, for a server that binds tokens to keys.
    dpop: Option<Arc<Prover>>,
    /// The per-request protocol's `"_meta":{...}` member, when requests are sent that way.
    per_request: Option<Arc<str>>,
    /// Calls `lookup`, whose two arguments the server checks against their `Mcp-Param-*`
    /// headers (per-request only), instead of `echo`.
    mirrored: bool,
}

impl Target {
    /// Reads `http://host:port/path`.
    pub(crate) fn parse(url: &str) -> anyhow::Result<Target> {
        let uri: Uri = url.parse().with_context(|| format!("bad --url {url:?}"))?;
        ensure!(
            uri.scheme_str() == Some("http"),
            "only http:// URLs are supported: {url}"
        );
        let authority = uri
            .authority()
            .with_context(|| format!("no host in {url}"))?
            .as_str()
            .to_owned();
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        Ok(Target {
            host: HeaderValue::from_str(&authority)?,
            authority,
            path,
            authorization: None,
            dpop: None,
            per_request: None,
            mirrored: false,
        })
    }

    /// Speaks the per-request protocol of 2026-07-28 to this target: no `initialize`, no
    /// session, `_meta` and the mirrored headers on every request.
    pub(crate) fn per_request(mut self) -> Target {
        self.per_request = Some(per_request::meta_member().into());
        self
    }

    /// Calls `lookup` instead of `echo`: two arguments, each mirrored in an `Mcp-Param-*`
    /// header that the server checks against the body (SPEC M8). Per-request targets only.
    pub(crate) fn mirrored(mut self) -> Target {
        self.mirrored = true;
        self
    }

    /// Whether requests are sent the per-request way.
    pub(crate) fn is_per_request(&self) -> bool {
        self.per_request.is_some()
    }

    /// Sends `Authorization: Bearer <token>` on every request.
    pub(crate) fn bearer(mut self, token: &str) -> anyhow::Result<Target> {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))?;
        value.set_sensitive(true);
        self.authorization = Some(value);
        Ok(self)
    }

    /// Sends `Authorization: DPoP <token>` on every request, and with each POST a fresh proof
    /// from `prover`.
    pub(crate) fn dpop(mut self, token: &str, prover: Prover) -> anyhow::Result<Target> {
        let mut value = HeaderValue::from_str(&format!("DPoP {token}"))?;
        value.set_sensitive(true);
        self.authorization = Some(value);
        self.dpop = Some(Arc::new(prover));
        Ok(self)
    }
}

/// An MCP session and the connection it uses.
#[derive(Debug)]
pub(crate) struct Session {
    target: Target,
    sender: SendRequest<Full<Bytes>>,
    /// The `Mcp-Session-Id` the server gave, if any (none in stateless mode).
    id: Option<HeaderValue>,
    version: HeaderValue,
    next_id: i64,
}

/// What a successful call returned.
#[derive(Debug)]
pub(crate) struct Reply {
    /// When the matching response had been read and parsed (the body may still hold a few
    /// bytes, which are read before the next request).
    pub(crate) at: Instant,
    /// How it came.
    pub(crate) kind: Kind,
    /// The result.
    pub(crate) result: Box<RawValue>,
}

impl Session {
    /// Opens a connection, without starting a session on it.
    pub(crate) async fn connect(target: &Target) -> anyhow::Result<Session> {
        let tcp = tokio::net::TcpStream::connect(&target.authority)
            .await
            .with_context(|| format!("connecting to {}", target.authority))?;
        tcp.set_nodelay(true)?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Session {
            target: target.clone(),
            sender,
            id: None,
            version: HeaderValue::from_static(PROTOCOL_VERSION),
            next_id: 1,
        })
    }

    /// Opens a new connection for the same session (to read its GET stream, for instance).
    pub(crate) async fn another_connection(&self) -> anyhow::Result<Session> {
        let mut other = Session::connect(&self.target).await?;
        other.id = self.id.clone();
        other.version = self.version.clone();
        Ok(other)
    }

    /// Makes the connection ready for calls: `initialize` and `notifications/initialized`, or
    /// nothing for a per-request target, which has no session to start.
    pub(crate) async fn start(&mut self) -> anyhow::Result<()> {
        if self.target.is_per_request() {
            return Ok(());
        }
        self.initialize().await
    }

    /// `initialize` and `notifications/initialized`.
    pub(crate) async fn initialize(&mut self) -> anyhow::Result<()> {
        let id = self.take_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"mcp-load","version":"0.0.0"}}}}}}"#
        );
        let response = self.post(body).await?;
        self.id = response.headers().get(SESSION_ID).cloned();
        let reply = read_reply(response, id).await?;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct InitializeResult<'a> {
            #[serde(borrow)]
            protocol_version: &'a str,
        }
        let result: InitializeResult<'_> = serde_json::from_str(reply.result.get())
            .with_context(|| format!("not an initialize result: {}", reply.result))?;
        self.version = HeaderValue::from_str(result.protocol_version)?;

        let response = self
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned())
            .await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        ensure!(
            status == StatusCode::ACCEPTED,
            "notifications/initialized answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        Ok(())
    }

    /// Calls `tools/call echo {text}`, checks the result and returns when it came.
    pub(crate) async fn echo(&mut self, text: &str) -> anyhow::Result<Reply> {
        let id = self.take_id();
        let response = match &self.target.per_request {
            None => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
                );
                self.post(body).await?
            }
            Some(meta) if self.target.mirrored => {
                let meta = meta.clone();
                return self.lookup(id, text, &meta).await;
            }
            Some(meta) => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}},{meta}}}}}"#
                );
                let mirrored = [
                    (MCP_METHOD, HeaderValue::from_static("tools/call")),
                    (MCP_NAME, HeaderValue::from_static("echo")),
                ];
                self.post_with(body, mirrored).await?
            }
        };
        let reply = read_reply(response, id).await?;
        check_text(&reply.result, text)?;
        Ok(reply)
    }

    /// Calls `lookup` the per-request way with `region` = `text` and `key` = `id`, both mirrored
    /// in `Mcp-Param-*` headers, and checks the tool's answer (`"text" id`).
    async fn lookup(&mut self, id: i64, text: &str, meta: &str) -> anyhow::Result<Reply> {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"lookup","arguments":{{"region":"{text}","key":{id}}},{meta}}}}}"#
        );
        let mirrored = [
            (MCP_METHOD, HeaderValue::from_static("tools/call")),
            (MCP_NAME, HeaderValue::from_static("lookup")),
            (PARAM_REGION, HeaderValue::from_str(text)?),
            (PARAM_KEY, HeaderValue::from(id)),
        ];
        let response = self.post_with(body, mirrored).await?;
        let reply = read_reply(response, id).await?;
        check_text(&reply.result, &format!("{text:?} {id}"))?;
        Ok(reply)
    }

    /// Calls `tools/call NAME ARGUMENTS` and returns the result, unchecked.
    pub(crate) async fn call(&mut self, name: &str, arguments: &str) -> anyhow::Result<Reply> {
        let id = self.take_id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
        );
        let response = self.post(body).await?;
        read_reply(response, id).await
    }

    /// Opens the session's standalone stream (GET): the response, once its headers came.
    pub(crate) async fn get_stream(&mut self) -> anyhow::Result<http::Response<Incoming>> {
        let request = self
            .request(Method::GET)
            .header(ACCEPT, "text/event-stream")
            .body(Full::default())?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        ensure!(
            response.status() == StatusCode::OK,
            "GET answered {}",
            response.status()
        );
        Ok(response)
    }

    /// Ends the session (DELETE), if it has an id; errors are ignored.
    pub(crate) async fn delete(&mut self) {
        if self.id.is_none() || self.sender.ready().await.is_err() {
            return;
        }
        let Ok(request) = self.request(Method::DELETE).body(Full::default()) else {
            return;
        };
        if let Ok(response) = self.sender.send_request(request).await {
            let _ = response.into_body().collect().await;
        }
    }

    /// Whether the connection is gone, so the session cannot go on.
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    fn take_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn request(&self, method: Method) -> http::request::Builder {
        let version = if self.target.is_per_request() {
            per_request::version_header()
        } else {
            self.version.clone()
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(self.target.path.as_str())
            .header(HOST, self.target.host.clone())
            .header(PROTOCOL_VERSION_HEADER, version);
        if let Some(value) = &self.target.authorization {
            builder = builder.header(http::header::AUTHORIZATION, value.clone());
        }
        if let Some(id) = &self.id {
            builder = builder.header(SESSION_ID, id.clone());
        }
        builder
    }

    async fn post(&mut self, body: String) -> anyhow::Result<http::Response<Incoming>> {
        self.post_with(body, []).await
    }

    /// POSTs `body` with the session's headers and `extra` ones.
    async fn post_with<const N: usize>(
        &mut self,
        body: String,
        extra: [(HeaderName, HeaderValue); N],
    ) -> anyhow::Result<http::Response<Incoming>> {
        let mut builder = self
            .request(Method::POST)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        for (name, value) in extra {
            builder = builder.header(name, value);
        }
        if let Some(prover) = &self.target.dpop {
            builder = builder.header("dpop", prover.proof()?);
        }
        let request = builder.body(Full::new(Bytes::from(body)))?;
        self.sender.ready().await?;
        Ok(self.sender.send_request(request).await?)
    }
}

/// Reads the response to request `id` from a JSON or SSE body; anything else is an error.
async fn read_reply(response: http::Response<Incoming>, id: i64) -> anyhow::Result<Reply> {
    let status = response.status();
    if status != StatusCode::OK {
        let body = response.into_body().collect().await?.to_bytes();
        bail!(
            "HTTP {status} for request {id}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        );
    }
    let (kind, response, at) = reply::read(response, id).await?;
    let result = into_result(response)?;
    Ok(Reply { at, kind, result })
}

fn into_result(response: Response) -> anyhow::Result<Box<RawValue>> {
    match response.into_parts() {
        (_, Ok(result)) => Ok(result),
        (_, Err(error)) => bail!("error response: {error:?}"),
    }
}

/// Checks that an echo result is `{"content":[{"type":"text","text":TEXT}]}` (other members,
/// such as rmcp's `isError`, allowed). The text is borrowed unless it holds escapes (`lookup`'s
/// quotes).
fn check_text(result: &RawValue, expected: &str) -> anyhow::Result<()> {
    #[derive(Deserialize)]
    struct ToolResult<'a> {
        #[serde(borrow)]
        content: Vec<Content<'a>>,
    }
    #[derive(Deserialize)]
    struct Content<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(borrow)]
        text: Cow<'a, str>,
    }
    let parsed: ToolResult<'_> = serde_json::from_str(result.get())
        .with_context(|| format!("not a tool result: {}", result.get()))?;
    match parsed.content.as_slice() {
        [Content { kind: "text", text }] if text == expected => Ok(()),
        _ => bail!("wrong echo: expected {expected:?}, got {}", result.get()),
    }
}
