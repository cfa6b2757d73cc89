//! The per-request family of the 2026-07-28 protocol (M1-M6): no sessions, one request per
//! POST, its metadata in `params._meta` and mirrored in headers, closing its stream cancels it.
//!
//! A modern request is checked (M3, then M4), then served by a connection of its own, like a
//! stateless POST: the application's factory runs once per request and its [`ServerConnection`]
//! ends with it. The reply is held until the application's first message for it, so that an
//! error answer gets its status (M5): JSON if the response comes first, SSE if a notification
//! does, or if nothing came for one keep-alive period (then the stream keeps the proxies awake,
//! and a later error travels in it with status 200).

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue};
use mcp_jsonrpc::{Body, Message, RawValue, code};
use serde::Deserialize;

use crate::body::ResponseBody;
use crate::config::Eras;
use crate::error::{Kind, Reject, codes};
use crate::headers::{
    self, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MODERN_VERSIONS, SUPPORTED_VERSIONS,
};
use crate::post::{empty, sse_response, start_transient};
use crate::service::Shared;
use crate::session::{Lifetime, Session};
use crate::stream::{JsonWait, OnEnd, SseBody};

/// The `_meta` key of the protocol version.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the client's capabilities.
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The family a POST belongs to (M1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// Sessions, `initialize`, GET streams, resumption: 2025-03-26 to 2025-11-25.
    Legacy,
    /// One request per POST, metadata per request: 2026-07-28 and later.
    Modern,
}

/// The fields of `params` the transport reads: `_meta`'s version and capabilities, and the
/// name `Mcp-Name` mirrors. Everything else is skipped without being built.
#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<Meta<'a>>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    capabilities: Option<&'a RawValue>,
}

/// The raw parameters of the one message of a body, if it has any.
fn raw_params(body: &Body) -> Option<&RawValue> {
    match body {
        Body::Single(Message::Request(r)) => r.params.as_deref(),
        Body::Single(Message::Notification(n)) => n.params.as_deref(),
        _ => None,
    }
}

/// The parameters of the one message of a body, if it has any the transport can read.
fn params_of(body: &Body) -> Option<Params<'_>> {
    serde_json::from_str(raw_params(body)?.get()).ok()
}

/// M1: a POST is modern when its message's `_meta` names a protocol version, or its
/// `MCP-Protocol-Version` header names a revision of 2026-07-28 or later; every other POST is
/// legacy. A server of the session-based family only takes every POST for one of its own.
pub(crate) fn classify(eras: Eras, header_version: Option<&str>, body: &Body) -> Era {
    if eras == Eras::LegacyOnly {
        return Era::Legacy;
    }
    if header_version.is_some_and(headers::is_modern_version) {
        return Era::Modern;
    }
    // Most POSTs of a session are not per-request: a search spares them a parse. The needle is
    // the key's last part, which JSON cannot write otherwise short of `\u` escapes (the `/`
    // before it may be written `\/`).
    if !raw_params(body).is_some_and(|raw| raw.get().contains("protocolVersion")) {
        return Era::Legacy;
    }
    let names_version = params_of(body)
        .and_then(|p| p.meta)
        .is_some_and(|m| m.version.is_some());
    if names_version {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// The versions this server speaks, newest first, for `UnsupportedProtocolVersion` (M3).
fn supported(eras: Eras) -> Vec<&'static str> {
    let mut all = MODERN_VERSIONS.to_vec();
    if eras != Eras::ModernOnly {
        all.extend_from_slice(SUPPORTED_VERSIONS);
    }
    // Dates sort as text.
    all.sort_unstable_by(|a, b| b.cmp(a));
    all
}

/// -32022 with `data: {supported, requested}` (M3).
pub(crate) fn unsupported_version(eras: Eras, requested: &str, hint: &str) -> Reject {
    let supported = supported(eras);
    let data = serde_json::json!({"supported": supported, "requested": requested});
    let reject = Reject::rpc(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "unsupported protocol version {requested:?}; supported: {}{hint}",
            supported.join(", ")
        ),
    );
    match mcp_jsonrpc::to_raw_value(&data) {
        Ok(data) => reject.with_data(data),
        Err(_) => reject,
    }
}

/// A JSON string's value, or `None` if `raw` is not a string.
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    Deserialize::deserialize(&mut serde_json::Deserializer::from_str(raw.get())).ok()
}

/// Decodes a header value of the 2026-07-28 headers: optional whitespace around it is not part
/// of it (RFC 9110), and `=?base64?...?=` carries the UTF-8 of the value in standard, padded
/// base64 (M4). The error says why the value cannot be read.
pub(crate) fn decode_value(raw: &HeaderValue) -> Result<Cow<'_, str>, String> {
    let bytes = raw.as_bytes();
    let text = std::str::from_utf8(bytes)
        .ok()
        .filter(|t| t.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)))
        .ok_or("it is not visible ASCII (encode such values as =?base64?...?=)")?;
    let text = text.trim_matches([' ', '\t']);
    let Some(encoded) = text
        .strip_prefix("=?base64?")
        .and_then(|t| t.strip_suffix("?="))
    else {
        return Ok(Cow::Borrowed(text));
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("its =?base64?...?= value is not valid base64: {e}"))?;
    String::from_utf8(decoded)
        .map(Cow::Owned)
        .map_err(|_| "its =?base64?...?= value does not decode to UTF-8".to_owned())
}

/// One header of the request, decoded; `Ok(None)` when absent.
fn header<'a>(parts: &'a http::request::Parts, name: &str) -> Result<Option<Cow<'a, str>>, Reject> {
    let mut values = parts.headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(mismatch(format!(
            "the {name} header is given more than once"
        )));
    }
    decode_value(value)
        .map(Some)
        .map_err(|why| mismatch(format!("the {name} header cannot be read: {why}")))
}

fn mismatch(message: String) -> Reject {
    Reject::rpc(
        codes::HEADER_MISMATCH,
        format!("header mismatch: {message}"),
    )
}

/// M3 and M4, in that order, for the body of a modern POST; returns the version to serve.
fn validate(eras: Eras, parts: &http::request::Parts, body: &Body) -> Result<&'static str, Reject> {
    let message = match body {
        Body::Single(m @ (Message::Request(_) | Message::Notification(_))) => m,
        Body::Single(Message::Response(_)) => {
            return Err(Reject::rpc(
                code::INVALID_REQUEST,
                "a 2026-07-28 client sends no responses: the server sends it no requests",
            ));
        }
        _ => {
            return Err(Reject::rpc(
                code::INVALID_REQUEST,
                "batches are not part of the 2026-07-28 protocol: send one request per POST",
            ));
        }
    };
    let params = params_of(body).unwrap_or_default();
    let meta = params.meta.unwrap_or_default();
    let is_request = message.is_request();
    // M3, first: what `_meta` must carry. Notifications carry no obligations in 2026-07-28.
    let meta_version = match meta.version {
        Some(raw) => Some(string(raw).ok_or_else(|| {
            Reject::rpc(
                code::INVALID_PARAMS,
                format!("params._meta[\"{META_PROTOCOL_VERSION}\"] must be a string"),
            )
        })?),
        None if is_request => {
            return Err(Reject::rpc(
                code::INVALID_PARAMS,
                format!(
                    "params._meta lacks \"{META_PROTOCOL_VERSION}\", which every 2026-07-28 request carries"
                ),
            ));
        }
        None => None,
    };
    if is_request && !meta.capabilities.is_some_and(|c| c.get().starts_with('{')) {
        return Err(Reject::rpc(
            code::INVALID_PARAMS,
            format!(
                "params._meta lacks \"{META_CLIENT_CAPABILITIES}\" (an object), which every 2026-07-28 request carries"
            ),
        ));
    }
    // M3, second: the header says what `_meta` says.
    let header_version = match headers::single(&parts.headers, MCP_PROTOCOL_VERSION) {
        Ok(v) => v.map(|v| v.trim_matches([' ', '\t'])),
        Err(()) => {
            return Err(mismatch(
                "the MCP-Protocol-Version header is malformed or given more than once".into(),
            ));
        }
    };
    let version = match (header_version, meta_version.as_deref()) {
        (Some(h), Some(m)) if h != m => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header {h:?} does not match params._meta version {m:?}"
            )));
        }
        (None, _) if is_request => {
            return Err(mismatch(
                "the MCP-Protocol-Version header is missing".into(),
            ));
        }
        (Some(v), _) | (None, Some(v)) => v,
        (None, None) => unreachable!("a modern notification names its version somewhere"),
    };
    // M3, third: a version this server serves in the per-request family.
    let Some(version) = MODERN_VERSIONS.iter().copied().find(|v| *v == version) else {
        let hint = if SUPPORTED_VERSIONS.contains(&version) && eras != Eras::ModernOnly {
            " (2025 revisions start with initialize, without params._meta)"
        } else {
            ""
        };
        return Err(unsupported_version(eras, version, hint));
    };
    // M4: the mirrored headers, decoded, equal the body's values; values are case-sensitive.
    let method = message.method().unwrap_or_default();
    match header(parts, MCP_METHOD)? {
        Some(h) if h == method => {}
        Some(h) => {
            return Err(mismatch(format!(
                "Mcp-Method header {h:?} does not match the body's method {method:?}"
            )));
        }
        None if is_request => {
            return Err(mismatch("the Mcp-Method header is missing".into()));
        }
        None => {}
    }
    let (field, source) = match method {
        "tools/call" | "prompts/get" => ("params.name", params.name),
        "resources/read" => ("params.uri", params.uri),
        _ => return Ok(version),
    };
    let body_value = source.and_then(string);
    match (header(parts, MCP_NAME)?, body_value) {
        (Some(h), Some(b)) if h == b => Ok(version),
        (Some(h), Some(b)) => Err(mismatch(format!(
            "Mcp-Name header {h:?} does not match the body's {field} {b:?}"
        ))),
        (Some(_), None) => Err(mismatch(format!(
            "the Mcp-Name header is given but the body has no string {field}"
        ))),
        (None, Some(_)) => Err(mismatch(format!(
            "the Mcp-Name header is missing; {method} requests mirror {field} in it"
        ))),
        // Nothing to mirror: the application answers the missing field.
        (None, None) => Ok(version),
    }
}

/// Serves one modern POST (M2-M6).
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    parts: http::request::Parts,
    body: Body,
) -> Result<http::Response<ResponseBody>, Reject> {
    let version = validate(shared.config.eras, &parts, &body)?;
    if body.messages().iter().any(Message::is_initialize) {
        return Err(Reject::rpc(
            code::METHOD_NOT_FOUND,
            format!(
                "initialize is not a method of protocol version {version}: send requests \
                 directly, each with its params._meta"
            ),
        ));
    }
    let session = start_transient(shared, parts, Lifetime::Request(version))?;
    // Until the reply is settled, dropping this future (the client went away) cancels the
    // request: the body below does it once it exists, this guard before.
    let mut guard = CancelOnDrop(Some(Arc::clone(&session)));
    let begun = session.begin(&body, None)?;
    let sse = begun.stream.map(|(stream, generation)| {
        SseBody::new(
            Arc::clone(&session),
            stream,
            Some(generation),
            OnEnd::Cancel,
        )
    });
    for message in body {
        begun
            .incoming
            .send(Box::new(message))
            .await
            .map_err(|_| ended_without_answer())?;
    }
    drop(begun.incoming);
    let Some(mut sse) = sse else {
        // A notification: delivered; the connection ends once the application has read it.
        return Ok(empty(StatusCode::ACCEPTED));
    };
    let first = match shared.config.keep_alive {
        Some(period) => tokio::time::timeout(period, sse.wait_json())
            .await
            .unwrap_or(Ok(None)),
        None => sse.wait_json().await,
    };
    match first {
        Ok(Some(mut responses)) => {
            let response = responses.pop().unwrap_or_default();
            Ok(json(response))
        }
        Ok(None) => {
            guard.0 = None;
            Ok(sse_response(sse))
        }
        Err(JsonWait::Closed | JsonWait::Moved) => Err(ended_without_answer()),
    }
}

fn ended_without_answer() -> Reject {
    Reject::new(
        Kind::Internal,
        "the server's application ended this request without answering it",
    )
}

/// A JSON reply, with the status its error calls for (M5).
fn json(response: Bytes) -> http::Response<ResponseBody> {
    #[derive(Deserialize)]
    struct Answer {
        error: Option<ErrorCode>,
    }
    #[derive(Deserialize)]
    struct ErrorCode {
        code: i64,
    }
    let status = serde_json::from_slice::<Answer>(&response)
        .ok()
        .and_then(|a| a.error)
        .and_then(|e| codes::status_of(e.code))
        .unwrap_or(StatusCode::OK);
    let mut reply = http::Response::new(ResponseBody::full(response));
    *reply.status_mut() = status;
    reply
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reply
}

/// Cancels a per-request session's request when dropped, unless disarmed.
struct CancelOnDrop(Option<Arc<Session>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            session.cancel_detached();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m4_header_values_are_trimmed_and_decoded() {
        let ok: &[(&str, &str)] = &[
            ("tools/call", "tools/call"),
            ("  get_weather\t", "get_weather"),
            ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
            ("=?base64?IHBhZGRlZCA=?=", " padded "),
            ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
            // The markers are case-sensitive: anything else is a plain value.
            ("=?BASE64?SGk=?=", "=?BASE64?SGk=?="),
            ("=?base64?", "=?base64?"),
        ];
        for (raw, want) in ok {
            let value = HeaderValue::from_str(raw).unwrap();
            assert_eq!(decode_value(&value).as_deref(), Ok(*want), "{raw}");
        }
        let bad: &[(&[u8], &str)] = &[
            (b"=?base64?SGVsbG8?=", "not valid base64"),
            (b"=?base64?SGVsbG8*?=", "not valid base64"),
            (b"=?base64?/w==?=", "UTF-8"),
            (b"caf\xc3\xa9", "visible ASCII"),
        ];
        for (raw, why) in bad {
            let value = HeaderValue::from_bytes(raw).unwrap();
            let err = decode_value(&value).unwrap_err();
            assert!(err.contains(why), "{raw:?}: {err}");
        }
    }

    #[test]
    fn m1_meta_makes_a_post_modern_however_its_key_is_escaped() {
        let classify_body = |json: &str| {
            let body = mcp_jsonrpc::parse(json.as_bytes()).unwrap();
            classify(Eras::Both, None, &body)
        };
        let plain = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let escaped = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}}"#;
        let legacy = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
        let elsewhere =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"protocolVersion"}}"#;
        assert_eq!(classify_body(plain), Era::Modern);
        assert_eq!(classify_body(escaped), Era::Modern);
        assert_eq!(classify_body(legacy), Era::Legacy);
        assert_eq!(classify_body(elsewhere), Era::Legacy);
    }

    #[test]
    fn m3_supported_versions_are_listed_newest_first() {
        assert_eq!(
            supported(Eras::Both),
            ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
        );
        assert_eq!(supported(Eras::ModernOnly), ["2026-07-28"]);
    }
}
