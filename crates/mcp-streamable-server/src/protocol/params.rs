//! The per-request family of 2026-07-28 (M1, M3, M4): which POSTs belong to it, and whether
//! a request's `params._meta` and mirrored headers are in order. The params are parsed once,
//! by [`classify`], and handed on to [`validate`].

use std::borrow::Cow;

use http::HeaderMap;
use mcp_jsonrpc::{Body, Message, RawValue, code};
use serde::Deserialize;

use crate::protocol::ToolHeaders;
use crate::protocol::transport::TransportHeaders;
use crate::protocol::{
    MCP_METHOD, MCP_NAME, ProtocolVersion, RpcError, codes, decode_header_value,
    is_per_request_date, meta,
};
use mcp_streamable_protocol::param_headers::PARAM_HEADER_PREFIX;

/// The family a POST belongs to (M1).
pub(crate) enum Family<'a> {
    /// Sessions, `initialize`, GET streams, resumption: 2025-03-26 to 2025-11-25.
    Session,
    /// One request per POST, metadata per request: 2026-07-28 and later, with the fields of
    /// its params the transport reads.
    PerRequest(Params<'a>),
}

/// The fields of `params` the transport reads: `_meta`'s version and capabilities, the name
/// `Mcp-Name` mirrors, and the arguments `Mcp-Param-*` headers mirror. Everything else is skipped without being built.
#[derive(Deserialize, Default)]
pub(crate) struct Params<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<Meta<'a>>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
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

/// M1: a POST is per-request when its message's `_meta` names a protocol version, or its
/// `MCP-Protocol-Version` header names a revision of 2026-07-28 or later; every other POST is
/// session-based. A server of the session-based family only (`per_request_served` false)
/// takes every POST for one of its own.
pub(crate) fn classify<'a>(
    per_request_served: bool,
    header_version: Option<&str>,
    body: &'a Body,
) -> Family<'a> {
    if !per_request_served {
        return Family::Session;
    }
    let by_header = header_version.is_some_and(is_per_request_date);
    // Most POSTs of a session are not per-request: a search spares them a parse. The needle is
    // the key's last part, which JSON cannot write otherwise short of `\u` escapes (the `/`
    // before it may be written `\/`).
    let raw = raw_params(body);
    let may_name = raw.is_some_and(|raw| raw.get().contains("protocolVersion"));
    if !by_header && !may_name {
        return Family::Session;
    }
    let params: Params<'a> = raw
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let names_version = params.meta.as_ref().is_some_and(|m| m.version.is_some());
    if by_header || names_version {
        Family::PerRequest(params)
    } else {
        Family::Session
    }
}

/// The versions this server speaks, newest first, for `UnsupportedProtocolVersion` (M3).
fn supported(sessions_served: bool) -> Vec<&'static str> {
    ProtocolVersion::ALL
        .iter()
        .rev()
        .filter(|v| sessions_served || v.is_per_request())
        .map(|v| v.as_str())
        .collect()
}

/// -32022 with `data: {supported, requested}` (M3).
pub(crate) fn unsupported_version(sessions_served: bool, requested: &str, hint: &str) -> RpcError {
    let supported = supported(sessions_served);
    let data = serde_json::json!({"supported": supported, "requested": requested});
    RpcError::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "unsupported protocol version {requested:?}; supported: {}{hint}",
            supported.join(", ")
        ),
    )
    .with_data(mcp_jsonrpc::to_raw_value(&data).ok())
}

/// A JSON string's value, or `None` if `raw` is not a string: borrowed from `raw` unless it
/// holds escapes (serde's `Cow` always copies).
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let borrowed = <&str>::deserialize(&mut serde_json::Deserializer::from_str(raw.get()));
    match borrowed {
        Ok(value) => Some(Cow::Borrowed(value)),
        Err(_) => String::deserialize(&mut serde_json::Deserializer::from_str(raw.get()))
            .ok()
            .map(Cow::Owned),
    }
}

/// One header of the request, decoded; `Ok(None)` when absent.
fn header<'a>(
    headers: &'a HeaderMap,
    name: &http::HeaderName,
) -> Result<Option<Cow<'a, str>>, RpcError> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(mismatch(format!(
            "the {name} header is given more than once"
        )));
    }
    decode_header_value(value)
        .map(Some)
        .map_err(|why| mismatch(format!("the {name} header cannot be read: {why}")))
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(
        codes::HEADER_MISMATCH,
        format!("header mismatch: {message}"),
    )
}

/// M3 and M4, in that order, for the body of a per-request POST and the params [`classify`]
/// read; returns the version to serve.
pub(crate) fn validate(
    sessions_served: bool,
    headers: &HeaderMap,
    transport: &TransportHeaders,
    tools: Option<&ToolHeaders>,
    body: &Body,
    params: Params<'_>,
) -> Result<ProtocolVersion, RpcError> {
    let message = match body {
        Body::Single(m @ (Message::Request(_) | Message::Notification(_))) => m,
        Body::Single(Message::Response(_)) => {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                "a 2026-07-28 client sends no responses: the server sends it no requests",
            ));
        }
        _ => {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                "batches are not part of the 2026-07-28 protocol: send one request per POST",
            ));
        }
    };
    let is_request = message.is_request();
    let meta = params.meta.unwrap_or_default();
    let meta_version = check_meta(&meta, is_request)?;
    let version = check_version_header(transport, meta_version.as_deref(), is_request)?;
    // M3, third: a version this server serves in the per-request family.
    let version = match version.parse::<ProtocolVersion>() {
        Ok(v) if v.is_per_request() => v,
        _ => {
            let hint = if sessions_served && version.parse::<ProtocolVersion>().is_ok() {
                " (2025 revisions start with initialize, without params._meta)"
            } else {
                ""
            };
            return Err(unsupported_version(sessions_served, version, hint));
        }
    };
    check_mirrored(headers, message, params.name, params.uri)?;
    if let Some(tools) = tools
        && message.method() == Some("tools/call")
    {
        check_params(headers, tools, params.name, params.arguments)?;
    }
    Ok(version)
}

/// M5: a `tools/call`'s `Mcp-Param-*` headers against its arguments, by the declarations of
/// the tool it names. The arguments are parsed only when there is something to compare.
fn check_params(
    headers: &HeaderMap,
    tools: &ToolHeaders,
    name: Option<&RawValue>,
    arguments: Option<&RawValue>,
) -> Result<(), RpcError> {
    let declared = tools.get(name.and_then(string).as_deref().unwrap_or_default());
    let mirrored = headers
        .keys()
        .any(|h| h.as_str().starts_with(PARAM_HEADER_PREFIX));
    if declared.as_ref().is_none_or(|d| d.is_empty()) && !mirrored {
        return Ok(());
    }
    // A tool not declared mirrors nothing: any `Mcp-Param-*` header on it is refused.
    let declared = declared.unwrap_or_default();
    let arguments: Option<serde_json::Value> = arguments
        .map(|raw| serde_json::from_str(raw.get()))
        .transpose()
        .map_err(|_| RpcError::new(code::INVALID_PARAMS, "params.arguments is not JSON"))?;
    declared
        .check(headers, arguments.as_ref())
        .map_err(|why| mismatch(why.to_string()))
}

/// M3, first: what `_meta` must carry; the version it names. Notifications carry no
/// obligations in 2026-07-28.
fn check_meta<'a>(meta: &Meta<'a>, is_request: bool) -> Result<Option<Cow<'a, str>>, RpcError> {
    let version = match meta.version {
        Some(raw) => Some(string(raw).ok_or_else(|| {
            RpcError::new(
                code::INVALID_PARAMS,
                format!(
                    "params._meta[\"{}\"] must be a string",
                    meta::PROTOCOL_VERSION
                ),
            )
        })?),
        None if is_request => {
            return Err(RpcError::new(
                code::INVALID_PARAMS,
                format!(
                    "params._meta lacks \"{}\", which every 2026-07-28 request carries",
                    meta::PROTOCOL_VERSION
                ),
            ));
        }
        None => None,
    };
    if is_request && !meta.capabilities.is_some_and(|c| c.get().starts_with('{')) {
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            format!(
                "params._meta lacks \"{}\" (an object), which every 2026-07-28 request carries",
                meta::CLIENT_CAPABILITIES
            ),
        ));
    }
    Ok(version)
}

/// M3, second: the header says what `_meta` says; the version named.
fn check_version_header<'a>(
    transport: &'a TransportHeaders,
    meta_version: Option<&'a str>,
    is_request: bool,
) -> Result<&'a str, RpcError> {
    let header_version = transport
        .version
        .get()
        .map_err(|()| {
            mismatch("the MCP-Protocol-Version header is malformed or given more than once".into())
        })?
        .map(|v| v.trim_matches([' ', '\t']));
    match (header_version, meta_version) {
        (Some(h), Some(m)) if h != m => Err(mismatch(format!(
            "MCP-Protocol-Version header {h:?} does not match params._meta version {m:?}"
        ))),
        (None, _) if is_request => Err(mismatch("the MCP-Protocol-Version header is missing".into())),
        (Some(v), _) | (None, Some(v)) => Ok(v),
        // Classified per-request by neither: the version is nowhere to be found.
        (None, None) => Err(mismatch("no protocol version: neither the MCP-Protocol-Version header nor params._meta names one".into())),
    }
}

/// M4: the mirrored headers, decoded, equal the body's values; values are case-sensitive.
fn check_mirrored(
    headers: &HeaderMap,
    message: &Message,
    name: Option<&RawValue>,
    uri: Option<&RawValue>,
) -> Result<(), RpcError> {
    let is_request = message.is_request();
    let method = message.method().unwrap_or_default();
    match header(headers, &MCP_METHOD)? {
        Some(h) if h == method => {}
        Some(h) => {
            return Err(mismatch(format!(
                "Mcp-Method header {h:?} does not match the body's method {method:?}"
            )));
        }
        None if is_request => return Err(mismatch("the Mcp-Method header is missing".into())),
        None => {}
    }
    let (field, source) = match method {
        "tools/call" | "prompts/get" => ("params.name", name),
        "resources/read" => ("params.uri", uri),
        _ => return Ok(()),
    };
    match (header(headers, &MCP_NAME)?, source.and_then(string)) {
        (Some(h), Some(b)) if h == b => Ok(()),
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
        (None, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m1_meta_makes_a_post_per_request_however_its_key_is_escaped() {
        let is_per_request = |json: &str| {
            let body = mcp_jsonrpc::parse(json.as_bytes()).unwrap();
            matches!(classify(true, None, &body), Family::PerRequest(_))
        };
        let plain = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let escaped = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}}"#;
        let session = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
        let elsewhere =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"protocolVersion"}}"#;
        assert!(is_per_request(plain));
        assert!(is_per_request(escaped));
        assert!(!is_per_request(session));
        assert!(!is_per_request(elsewhere));
    }

    #[test]
    fn m3_supported_versions_are_listed_newest_first() {
        assert_eq!(
            supported(true),
            ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
        );
        assert_eq!(supported(false), ["2026-07-28"]);
    }

    /// A notification classified by a header that names a per-request version, whose header
    /// then cannot be read, names its version nowhere: a refusal, not a panic.
    #[test]
    fn a_notification_that_names_its_version_nowhere_is_refused() {
        let body = mcp_jsonrpc::parse(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#).unwrap();
        let headers = HeaderMap::new();
        let transport = TransportHeaders::read(&headers);
        let err = validate(true, &headers, &transport, None, &body, Params::default()).unwrap_err();
        assert_eq!(err.code, codes::HEADER_MISMATCH);
    }
}
