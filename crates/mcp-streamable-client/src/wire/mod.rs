//! The HTTP layer: the connection pools, building requests, authorization and status checks,
//! and sending again a request that met a stale keep-alive connection.
//!
//! HTTP/1.1 requests to the configured endpoint, plain or over TLS, go through [`Pool`], whose
//! connections (the client's own, [`h1`]) are driven by the tasks that use them; everything
//! else (an `https` endpoint that chose HTTP/2 by ALPN, HTTP/2 by prior knowledge, another
//! origin) through hyper-util's pooled client. Both open their connections with the shared
//! stack's `Connector` (`mcp-http-client`): one TCP and TLS setup.

mod body;
mod call;
mod h1;
mod negotiation;
mod pool;
mod proof;
mod stale;
#[cfg(all(test, feature = "rustls"))]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, HeaderValue,
    TRANSFER_ENCODING, WWW_AUTHENTICATE,
};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as PooledClient;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use mcp_http_client::Connector;

use mcp_streamable_protocol::headers::{
    LAST_EVENT_ID, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID,
};

use crate::auth::{AuthContext, ProofContext};
use crate::config::Config;
use crate::error::{ERROR_BODY_PREFIX, Error, Kind};
use crate::headers::JSON;
use crate::shape::{self, MetaHeaders};
use mcp_streamable_protocol::headers::DPOP;
use negotiation::Negotiation;
use pool::Pool;
use proof::{Credentials, Nonce};
use stale::Counting;

pub(crate) use body::{Body, BodyError};
pub(crate) use call::{Call, NO_SESSION, SessionHeaders};

/// How long reading the body of an error answer may take at most, whatever is left of the
/// request timeout: the body is a courtesy, the status is the answer.
const ERROR_BODY_TIMEOUT: Duration = Duration::from_secs(2);

/// How much of a refusal's body is read to find the JSON-RPC error in it: 64 KiB. A modern
/// server's refusal is a short error object (a -32022 lists a few versions); reading more than
/// the [`ERROR_BODY_PREFIX`] kept for display lets a long message through, and the bound keeps
/// a misbehaving server from making the client buffer much.
const MAX_REFUSAL_BODY: usize = 64 * 1024;

/// The answer to one per-request POST (M7).
#[derive(Debug)]
pub(crate) enum Answer {
    /// A success status; the body is still to read.
    Success(Response<Body>),
    /// A 400 or 404 whose body is a JSON-RPC error response: the request's answer.
    Refused {
        status: StatusCode,
        error: mcp_jsonrpc::ErrorObject,
        /// The same, as an error for a caller that cannot deliver a response.
        failure: Error,
    },
    /// Anything else.
    Failed(Error),
}

/// How long a connection may sit idle before TCP keep-alive probes check that the server is
/// still there: an SSE stream can be silent for long, and a server that vanished without closing
/// (a crashed host, a dropped NAT entry) would otherwise hold its readers until the OS gives up.
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// The time between keep-alive probes, and how many unanswered probes end the connection:
/// together with [`TCP_KEEPALIVE`], a vanished server is noticed in about a minute.
const TCP_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const TCP_KEEPALIVE_RETRIES: u32 = 3;

/// The connection pools and the configuration they serve.
pub(crate) struct Http {
    /// HTTP/1.1 connections to the configured endpoint's origin, unless it is HTTP/2 by prior
    /// knowledge.
    pool: Option<Pool>,
    /// hyper-util's pooled client, for the rest.
    client: PooledClient<Counting, Full<Bytes>>,
    /// The same, without a pool: every request gets a connection of its own. A request that met
    /// a stale pooled connection is sent again through it.
    fresh: PooledClient<Counting, Full<Bytes>>,
    /// The `Host` header of the [`Pool`]'s requests, made once.
    host: Option<HeaderValue>,
    /// The server's last DPoP nonce, for the auth provider's proofs.
    nonce: Nonce,
    pub(crate) config: Config,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Http {
    pub(crate) fn new(
        config: Config,
        #[cfg(feature = "rustls")] tls: Option<rustls::ClientConfig>,
    ) -> Result<Http, Error> {
        let connector = Connector::new(config.connect_timeout).tcp_keepalive(
            TCP_KEEPALIVE,
            TCP_KEEPALIVE_INTERVAL,
            TCP_KEEPALIVE_RETRIES,
        );
        // The platform's roots are read only where `https` may be spoken.
        #[cfg(feature = "rustls")]
        let connector = match config.url.scheme_str() == Some("https") || tls.is_some() {
            true => connector
                .https(tls)
                .map_err(|e| Error::new(Kind::Builder).with(e))?,
            false => connector,
        };
        let negotiation = Arc::new(Negotiation::new(&config.url));
        let pool = (!config.http2_prior_knowledge)
            .then(|| Pool::new(connector.clone(), config.url.clone(), negotiation.clone()));
        let counting = Counting {
            connector,
            negotiation,
        };
        let mut builder = PooledClient::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .http2_only(config.http2_prior_knowledge);
        let client = builder.build(counting.clone());
        let fresh = builder.pool_max_idle_per_host(0).build(counting);
        Ok(Http {
            pool,
            client,
            fresh,
            host: host_header(&config),
            nonce: Nonce::default(),
            config,
        })
    }

    /// Makes the request: asks the auth provider for a header, retries after a 401 and after a
    /// 403 `insufficient_scope` (once each) with a fresh one, and turns a status other than a
    /// success into an error holding the status and the start of the body (C7, C9).
    pub(crate) async fn execute(&self, call: &Call<'_>) -> Result<Response<Body>, Error> {
        // Boxed: every caller's future, and theirs in turn, would otherwise hold the exchange's
        // state, over a kilobyte that each of them copies when it starts awaiting.
        let response = Box::pin(self.exchange(call)).await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let expired = status == StatusCode::NOT_FOUND && call.session.id.is_some();
        // Boxed, as rare: its state would enlarge every request's.
        let body = Box::pin(error_body(
            response.into_body(),
            ERROR_BODY_PREFIX,
            call.timeout,
        ));
        Err(Error::from_status(status, error_text(&body.await), expired))
    }

    /// Makes the request as [`execute`](Http::execute) does, but returns the answer whatever its
    /// status, for callers that read the body of a failure themselves.
    pub(crate) async fn exchange(&self, call: &Call<'_>) -> Result<Response<Body>, Error> {
        let mut auth = self.authorization(AuthContext::default()).await?;
        // One retry after a 401 and one after a 403 `insufficient_scope`: a token granted after
        // the 401 may still lack a scope. One more after a 401 asking for a DPoP nonce.
        let (mut refreshed, mut stepped_up, mut nonced) = (false, false, false);
        loop {
            let credentials = Credentials {
                proof: self.proof(call, auth.as_ref())?,
                authorization: auth.clone(),
            };
            let response = tokio::time::timeout(call.timeout, self.send(call, &credentials))
                .await
                .map_err(|_| Error::timeout(call.deadline))??;
            if self.config.auth.is_some() {
                self.nonce.remember(response.headers());
            }
            if credentials.proof.is_some()
                && proof::asks_for_nonce(&response)
                && !std::mem::replace(&mut nonced, true)
            {
                tracing::debug!("server asked for a DPoP nonce; retrying with it");
                continue;
            }
            let retry = match refusal_of_authorization(&response) {
                Some(StatusCode::UNAUTHORIZED) => !std::mem::replace(&mut refreshed, true),
                Some(_) => !std::mem::replace(&mut stepped_up, true),
                None => false,
            };
            if retry && self.config.auth.is_some() {
                let context = AuthContext {
                    refused: auth.clone(),
                    challenge: response.headers().get(WWW_AUTHENTICATE).cloned(),
                    status: Some(response.status()),
                };
                let fresh = self.authorization(context).await?;
                if fresh.is_some() && fresh != auth {
                    tracing::debug!("server refused the authorization; retrying with a new one");
                    auth = fresh;
                    continue;
                }
            }
            return Ok(response);
        }
    }

    /// Sends the request once; again, on a fresh connection, if it met a stale keep-alive one
    /// (RFC 9112, section 9.3.1.1: no byte of a response came back on a reused connection, so
    /// the server did not act on it). Only then: any other failure may follow a request the
    /// server acted on.
    ///
    /// A request sent again so carries the same DPoP proof: the server did not act on the
    /// first.
    async fn send(
        &self,
        call: &Call<'_>,
        credentials: &Credentials,
    ) -> Result<Response<Body>, Error> {
        if let Some(pool) = self.pool.as_ref().filter(|_| self.pools(call.uri)) {
            let head = |out: &mut Vec<u8>| self.write_head(call, credentials, out);
            let body = call.body.as_ref();
            if let Some((parts, body)) = pool.send(&head, body).await? {
                return Ok(Response::from_parts(parts, Body::pooled(body)));
            }
        }
        // Boxed: its state would enlarge every request's.
        Box::pin(self.send_through_client(call, credentials)).await
    }

    /// Sends the request through hyper-util's client.
    async fn send_through_client(
        &self,
        call: &Call<'_>,
        credentials: &Credentials,
    ) -> Result<Response<Body>, Error> {
        let request = || self.request(call, credentials);
        match self.client.request(request()).await {
            Ok(response) => Ok(response.map(Body::new)),
            Err(e) if stale::met_stale_connection(&e) => {
                tracing::debug!(error = %e, "pooled connection was stale; sending on a fresh one");
                let again = self.fresh.request(request()).await;
                again
                    .map(|response| response.map(Body::new))
                    .map_err(|e| Error::new(Kind::Http).with(e))
            }
            Err(e) => Err(Error::new(Kind::Http).with(e)),
        }
    }

    /// Whether a request to `uri` goes through [`Pool`]: it has the configured endpoint's
    /// origin, which speaks HTTP/1.1 (or has not said yet).
    fn pools(&self, uri: &Uri) -> bool {
        self.same_origin(uri) && self.pool.as_ref().is_some_and(Pool::speaks_http1)
    }

    /// Whether `uri` has the configured endpoint's origin; at once when it is the configured
    /// URL itself, as it is for every request but the 2024-11-05 transport's POSTs (comparing
    /// authorities ignores case, byte by byte).
    fn same_origin(&self, uri: &Uri) -> bool {
        let url = &self.config.url;
        std::ptr::eq(uri, url)
            || (uri.scheme() == url.scheme() && uri.authority() == url.authority())
    }

    /// POSTs one per-request message's bytes with its headers (M7): no session id, no
    /// `Last-Event-ID`. A refusal carrying a JSON-RPC error is told apart from other failures.
    pub(crate) async fn post_per_request(&self, body: Bytes, meta: &MetaHeaders) -> Answer {
        let call = Call::post(&self.config, &self.config.url, &NO_SESSION, body).meta(meta);
        let response = match self.exchange(&call).await {
            Ok(response) => response,
            Err(e) => return Answer::Failed(e),
        };
        let status = response.status();
        if status.is_success() {
            return Answer::Success(response);
        }
        let body = error_body(response.into_body(), MAX_REFUSAL_BODY, call.timeout).await;
        let failure = Error::from_status(status, error_text(&body), false);
        match shape::rpc_error(&body) {
            Some(error) if matches!(status, StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND) => {
                Answer::Refused {
                    status,
                    error,
                    failure,
                }
            }
            _ => Answer::Failed(failure),
        }
    }

    async fn authorization(&self, context: AuthContext) -> Result<Option<HeaderValue>, Error> {
        match &self.config.auth {
            None => Ok(None),
            Some(provider) => provider
                .authorization(context)
                .await
                .map_err(|e| Error::new(Kind::Auth).with(e)),
        }
    }

    /// The auth provider's DPoP proof for one try of `call`, with the server's last nonce.
    fn proof(
        &self,
        call: &Call<'_>,
        authorization: Option<&HeaderValue>,
    ) -> Result<Option<HeaderValue>, Error> {
        let Some(provider) = &self.config.auth else {
            return Ok(None);
        };
        let nonce = self.nonce.current();
        let context = ProofContext::new(&call.method, call.uri, authorization, nonce.as_ref());
        provider
            .proof(&context)
            .map_err(|e| Error::new(Kind::Auth).with(e))
    }

    /// The request `call` describes, for hyper-util's client.
    fn request(&self, call: &Call<'_>, credentials: &Credentials) -> Request<Full<Bytes>> {
        // Built in place rather than through `Request::builder`, which moves the request's
        // parts at each step.
        let mut request = Request::new(Full::new(call.body.clone().unwrap_or_default()));
        *request.method_mut() = call.method.clone();
        *request.uri_mut() = call.uri.clone();
        let headers = request.headers_mut();
        // hyper-util writes the `Host` of HTTP/1.1 itself, and HTTP/2 has none.
        self.each_header(call, credentials, None, |name, value| {
            headers.append(name, value.clone());
        });
        request
    }

    /// Writes the head of the request `call` describes, for a connection of the [`Pool`]: the
    /// URI in origin form (its path and query), as the request goes to the connection's own
    /// origin.
    fn write_head(&self, call: &Call<'_>, credentials: &Credentials, out: &mut Vec<u8>) {
        let target = call.uri.path_and_query().map_or("/", |p| p.as_str());
        h1::write_request_line(&call.method, target, out);
        let host = self.host.as_ref();
        self.each_header(call, credentials, host, |name, value| {
            h1::write_field(&name, value, out)
        });
        h1::write_end(call.body.as_ref().map(Bytes::len), out);
    }

    /// Hands `each` the headers of the request `call` describes, each name once: `host` when
    /// given, the configured headers but those the transport sets itself on this request (and
    /// the framing ones, never), and the transport's own (C1, C9, M7).
    fn each_header(
        &self,
        call: &Call<'_>,
        credentials: &Credentials,
        host: Option<&HeaderValue>,
        mut each: impl FnMut(HeaderName, &HeaderValue),
    ) {
        let version = call
            .meta
            .map(|m| &m.version)
            .or(call.session.version.as_ref());
        let own = [
            (AUTHORIZATION, credentials.authorization.as_ref()),
            (DPOP, credentials.proof.as_ref()),
            (ACCEPT, Some(&call.accept)),
            (CONTENT_TYPE, call.body.as_ref().map(|_| &CONTENT_TYPE_JSON)),
            (MCP_SESSION_ID, call.session.id.as_ref()),
            (MCP_PROTOCOL_VERSION, version),
            (MCP_METHOD, call.meta.map(|m| &m.method)),
            (MCP_NAME, call.meta.and_then(|m| m.name.as_ref())),
            (LAST_EVENT_ID, call.last_event_id.as_ref()),
        ];
        if let Some(host) = host {
            each(HOST, host);
        }
        for (name, value) in &self.config.headers {
            // The body's framing is the transport's to say, whatever the request.
            let framing = name == CONTENT_LENGTH || name == TRANSFER_ENCODING;
            let mirrored = call
                .meta
                .is_some_and(|m| m.params.iter().any(|(p, _)| p == name));
            let replaced = framing
                || mirrored
                || (host.is_some() && name == HOST)
                || own.iter().any(|(own, set)| set.is_some() && own == name);
            if !replaced {
                each(name.clone(), value);
            }
        }
        for (name, value) in own {
            if let Some(value) = value {
                each(name, value);
            }
        }
        for (name, value) in call.meta.iter().flat_map(|m| &m.params) {
            each(name.clone(), value);
        }
    }
}

/// [`JSON`], as a static to lend.
static CONTENT_TYPE_JSON: HeaderValue = JSON;

/// The `Host` header of the [`Pool`]'s requests, as hyper-util writes it: the port only when
/// it is not the scheme's default.
fn host_header(config: &Config) -> Option<HeaderValue> {
    let url = &config.url;
    let host = url.host()?;
    let default = match url.scheme_str() {
        Some("https") => 443,
        _ => 80,
    };
    let value = match url.port_u16() {
        Some(port) if port != default => format!("{host}:{port}"),
        _ => host.to_owned(),
    };
    HeaderValue::from_str(&value).ok()
}

/// The first `limit` bytes of an error answer's body, read for at most `timeout` (and never
/// longer than [`ERROR_BODY_TIMEOUT`]): a body that does not come in time leaves what was read.
pub(crate) async fn error_body(mut body: Body, limit: usize, timeout: Duration) -> Vec<u8> {
    let mut buf = Vec::new();
    let read = async {
        while buf.len() < limit {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        let room = limit - buf.len();
                        buf.extend_from_slice(&data[..data.len().min(room)]);
                    }
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(timeout.min(ERROR_BODY_TIMEOUT), read).await;
    buf
}

/// The start of an error answer's body as text: at most [`ERROR_BODY_PREFIX`] bytes, cut at a
/// character boundary, trimmed.
pub(crate) fn error_text(body: &[u8]) -> String {
    let buf = &body[..body.len().min(ERROR_BODY_PREFIX)];
    let text = match std::str::from_utf8(buf) {
        Ok(text) => text.to_owned(),
        Err(e) if e.error_len().is_none() => {
            String::from_utf8_lossy(&buf[..e.valid_up_to()]).into_owned()
        }
        Err(_) => String::from_utf8_lossy(buf).into_owned(),
    };
    text.trim().to_owned()
}

/// The status of an answer that refuses the authorization sent, so the provider may offer
/// another: 401, or 403 with `error="insufficient_scope"` in its challenge, which asks for a
/// token with more scope (RFC 6750, section 3.1; the MCP authorization spec's step-up).
fn refusal_of_authorization(response: &Response<Body>) -> Option<StatusCode> {
    let refused = match response.status() {
        StatusCode::UNAUTHORIZED => true,
        StatusCode::FORBIDDEN => response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("insufficient_scope")),
        _ => false,
    };
    refused.then(|| response.status())
}
