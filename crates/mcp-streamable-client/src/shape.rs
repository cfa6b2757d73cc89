//! Shaping a message for the 2026-07-28 per-request protocol (M7): the `_meta` members every
//! request carries, the headers mirrored from the body, and reading what a per-request server
//! answers when it refuses a request. The names, keys and codes are the shared protocol
//! crate's.

use std::borrow::Cow;
use std::collections::BTreeMap;

use http::{HeaderName, HeaderValue, StatusCode};
use mcp_jsonrpc::{Body, ErrorObject, Id, Message, Notification, RawValue, code, to_raw_value};
use mcp_streamable_protocol::codes::{
    HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION,
};
use mcp_streamable_protocol::{ProtocolVersion, encode_header_value, meta};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Kind, Unsupported};

/// The notification that cancels a request. In the per-request protocol over HTTP, closing the
/// request's response stream is the cancellation, and this notification is never posted.
pub(crate) const CANCELLED: &str = "notifications/cancelled";

/// The method whose calls mirror their arguments into `Mcp-Param-*` headers (M8).
pub(crate) const TOOLS_CALL: &str = "tools/call";

/// The method that lists the tools, whose results declare those headers (M8).
pub(crate) const TOOLS_LIST: &str = "tools/list";

/// Who the client is: what every per-request message says in `_meta`, and the transport's own
/// `initialize` in its params.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// `{"name": .., "version": ..}`.
    info: Box<RawValue>,
    /// A JSON object.
    capabilities: Box<RawValue>,
}

impl Identity {
    pub(crate) fn new(
        name: &str,
        version: &str,
        capabilities: &serde_json::Value,
    ) -> Result<Identity, Error> {
        #[derive(Serialize)]
        struct Info<'a> {
            name: &'a str,
            version: &'a str,
        }
        let invalid = |e: serde_json::Error| Error::new(Kind::Builder).with(e);
        if !capabilities.is_object() {
            return Err(Error::new(Kind::Builder).with("the client capabilities must be an object"));
        }
        Ok(Identity {
            info: to_raw_value(&Info { name, version }).map_err(invalid)?,
            capabilities: to_raw_value(capabilities).map_err(invalid)?,
        })
    }

    /// The params of an `initialize` asking for `version`.
    pub(crate) fn initialize_params(&self, version: &str) -> Box<RawValue> {
        #[derive(Serialize)]
        struct Params<'a> {
            #[serde(rename = "protocolVersion")]
            protocol_version: &'a str,
            capabilities: &'a RawValue,
            #[serde(rename = "clientInfo")]
            client_info: &'a RawValue,
        }
        let params = Params {
            protocol_version: version,
            capabilities: &self.capabilities,
            client_info: &self.info,
        };
        to_raw_value(&params).expect("a struct of strings and raw JSON serializes")
    }
}

/// The members of `params` the transport reads, left raw.
#[derive(Deserialize, Default)]
struct Members<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
}

fn members(params: Option<&RawValue>) -> Members<'_> {
    params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default()
}

/// The protocol version `params._meta` declares, if it declares one as a string: such a
/// message is per-request, whatever the family setting (M1).
pub(crate) fn declared_version(params: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
        version: Option<Cow<'a, str>>,
    }
    // Most messages declare nothing: without `_meta` in its bytes, or a `\u` escape that could
    // spell it, params need no parsing.
    let text = params?.get();
    if !may_hold_meta(text.as_bytes()) {
        return None;
    }
    let meta: Meta<'_> = serde_json::from_str(members(params).meta?.get()).ok()?;
    meta.version.map(Cow::into_owned)
}

/// Whether JSON text may hold a `_meta` member: it holds `_meta`, or a `\u` escape that could
/// spell it. One pass, as most texts have neither an underscore nor a backslash.
fn may_hold_meta(text: &[u8]) -> bool {
    memchr::memchr2_iter(b'_', b'\\', text).any(|at| {
        let rest = &text[at + 1..];
        match text[at] {
            b'_' => rest.starts_with(b"meta"),
            _ => rest.first() == Some(&b'u'),
        }
    })
}

/// The members of a JSON object, kept raw; absent and `null` are empty, anything else `None`.
type Object = BTreeMap<String, Box<RawValue>>;

fn object(value: Option<&RawValue>) -> Option<Object> {
    match value {
        None => Some(Object::new()),
        Some(v) if v.get().trim() == "null" => Some(Object::new()),
        Some(v) => serde_json::from_str(v.get()).ok(),
    }
}

/// `params` with the three `_meta` members of a per-request message added: the members the
/// application set (in `_meta` or elsewhere) are kept as they are, never overwritten.
pub(crate) fn fill(
    params: Option<&RawValue>,
    version: &str,
    identity: &Identity,
) -> Result<Box<RawValue>, Error> {
    let not_object = || Error::new(Kind::Unsupported(Unsupported::Params));
    let mut params = object(params).ok_or_else(not_object)?;
    let version = to_raw_value(version).map_err(|e| not_object().with(e))?;
    let mut members = object(params.remove("_meta").as_deref()).ok_or_else(not_object)?;
    members
        .entry(meta::PROTOCOL_VERSION.to_owned())
        .or_insert(version);
    members
        .entry(meta::CLIENT_INFO.to_owned())
        .or_insert_with(|| identity.info.clone());
    members
        .entry(meta::CLIENT_CAPABILITIES.to_owned())
        .or_insert_with(|| identity.capabilities.clone());
    let members = to_raw_value(&members).map_err(|e| not_object().with(e))?;
    params.insert("_meta".to_owned(), members);
    to_raw_value(&params).map_err(|e| not_object().with(e))
}

/// The headers a per-request POST mirrors from its body (M7).
#[derive(Debug, Clone)]
pub(crate) struct MetaHeaders {
    /// `MCP-Protocol-Version`, equal to `_meta`'s.
    pub(crate) version: HeaderValue,
    /// `Mcp-Method`, the body's `method`.
    pub(crate) method: HeaderValue,
    /// `Mcp-Name`: `params.name` of `tools/call` and `prompts/get`, `params.uri` of
    /// `resources/read`.
    pub(crate) name: Option<HeaderValue>,
    /// `Mcp-Param-*` of a `tools/call`, from the tool's declarations (M8).
    pub(crate) params: Vec<(HeaderName, HeaderValue)>,
}

impl MetaHeaders {
    /// The headers of a message calling `method` with `params`, in protocol `version`.
    pub(crate) fn new(
        method: &str,
        params: Option<&RawValue>,
        version: &str,
    ) -> Result<MetaHeaders, Error> {
        let version = HeaderValue::from_str(version)
            .map_err(|e| Error::new(Kind::Unsupported(Unsupported::Version)).with(e))?;
        let name = match method {
            "tools/call" | "prompts/get" => members(params).name,
            "resources/read" => members(params).uri,
            _ => None,
        };
        // A name that is not a string is the server's to refuse (-32602), with its own words.
        let name = name
            .and_then(|raw| serde_json::from_str::<Cow<'_, str>>(raw.get()).ok())
            .map(|name| encode_header_value(&name));
        Ok(MetaHeaders {
            version,
            method: encode_header_value(method),
            name,
            params: Vec::new(),
        })
    }
}

/// The error of a body holding exactly one JSON-RPC error response.
pub(crate) fn rpc_error(body: &[u8]) -> Option<ErrorObject> {
    match mcp_jsonrpc::parse(body).ok()? {
        Body::Single(Message::Response(response)) => response.into_parts().1.err(),
        _ => None,
    }
}

/// Whether a refused request proves that the endpoint speaks the per-request protocol: the
/// errors a modern server answers to a well-formed request it will not serve (M5). -32700 and
/// -32600 are not among them, although a modern server answers 400 with them too: the
/// transport sends no malformed message, and session-based servers use them for their own
/// refusals (the Python SDK answers "Bad Request: Missing session ID" with -32600), so they say
/// nothing of the family.
pub(crate) fn is_per_request_refusal(status: StatusCode, code: i64) -> bool {
    match status {
        StatusCode::BAD_REQUEST => matches!(
            code,
            HEADER_MISMATCH
                | MISSING_REQUIRED_CLIENT_CAPABILITY
                | UNSUPPORTED_PROTOCOL_VERSION
                | code::INVALID_PARAMS
        ),
        StatusCode::NOT_FOUND => code == code::METHOD_NOT_FOUND,
        _ => false,
    }
}

/// What a -32022 leaves to try: the newest version in its `data.supported` this client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// A per-request version: retry with it.
    PerRequest(ProtocolVersion),
    /// Only a session-based version: `initialize` with it.
    Session(ProtocolVersion),
    /// None in common.
    Neither,
}

/// The newest version a -32022 lists that this client speaks.
pub(crate) fn choose(error: &ErrorObject) -> Choice {
    #[derive(Deserialize)]
    struct Data {
        #[serde(default)]
        supported: Vec<serde_json::Value>,
    }
    let supported = error
        .data
        .as_deref()
        .and_then(|data| serde_json::from_str::<Data>(data.get()).ok())
        .map(|data| data.supported)
        .unwrap_or_default();
    let newest = |ours: &'static [ProtocolVersion]| {
        ours.iter()
            .rev()
            .copied()
            .find(|v| supported.iter().any(|s| s.as_str() == Some(v.as_str())))
    };
    if let Some(version) = newest(ProtocolVersion::PER_REQUEST) {
        Choice::PerRequest(version)
    } else if let Some(version) = newest(ProtocolVersion::SESSION) {
        Choice::Session(version)
    } else {
        Choice::Neither
    }
}

/// The request a `notifications/cancelled` names.
pub(crate) fn cancelled_request(notification: &Notification) -> Option<Id> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "requestId")]
        request_id: Id,
    }
    if notification.method != CANCELLED {
        return None;
    }
    let params: Params = notification.parse_params().ok()?;
    Some(params.request_id)
}

/// The id of the `n`th re-send of the request `original` after its stream broke (M7): derived
/// from the original so that logs tie them together, and a string, so that it can never equal
/// an integer id the application chose.
pub(crate) fn resend_id(original: &Id, n: u32) -> Id {
    match original {
        Id::Number(id) => Id::String(format!("{id}~resend-{n}")),
        Id::String(id) => Id::String(format!("{id}~resend-{n}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn raw(value: Value) -> Box<RawValue> {
        to_raw_value(&value).unwrap()
    }

    fn identity() -> Identity {
        Identity::new("c", "1", &json!({"roots": {}})).unwrap()
    }

    #[test]
    fn fill_adds_the_three_members_and_keeps_the_applications() {
        let params = raw(json!({
            "name": "t",
            "_meta": {"progressToken": 7, meta::CLIENT_INFO: {"name": "app", "version": "9"}}
        }));
        let filled = fill(Some(&params), "2026-07-28", &identity()).unwrap();
        let filled: Value = serde_json::from_str(filled.get()).unwrap();
        assert_eq!(
            filled,
            json!({
                "name": "t",
                "_meta": {
                    "progressToken": 7,
                    meta::PROTOCOL_VERSION: "2026-07-28",
                    meta::CLIENT_INFO: {"name": "app", "version": "9"},
                    meta::CLIENT_CAPABILITIES: {"roots": {}},
                }
            })
        );
        let empty = fill(None, "v", &identity()).unwrap();
        let empty: Value = serde_json::from_str(empty.get()).unwrap();
        assert_eq!(
            empty,
            json!({"_meta": {
                meta::PROTOCOL_VERSION: "v",
                meta::CLIENT_INFO: {"name": "c", "version": "1"},
                meta::CLIENT_CAPABILITIES: {"roots": {}},
            }})
        );
        assert!(fill(Some(&raw(json!(null))), "v", &identity()).is_ok());
        let err = fill(Some(&raw(json!([1, 2]))), "v", &identity()).unwrap_err();
        assert!(err.is_unsupported());
        assert!(fill(Some(&raw(json!({"_meta": 3}))), "v", &identity()).is_err());
    }

    #[test]
    fn only_text_with_meta_or_an_escape_is_parsed() {
        assert!(may_hold_meta(br#"{"_meta":{}}"#));
        assert!(may_hold_meta(br#"{"a":"\u005fmeta"}"#));
        assert!(!may_hold_meta(
            br#"{"name":"echo","arguments":{"text":"a_b \\ c"}}"#
        ));
        assert!(!may_hold_meta(br#"{"a_met":"x_"}"#));
        assert!(!may_hold_meta(b""));
    }

    #[test]
    fn the_declared_version_is_read_from_meta_only() {
        let declared = |v: Value| declared_version(Some(&raw(v)));
        assert_eq!(
            declared(json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}, "name": 5})),
            Some("2026-07-28".to_owned())
        );
        assert_eq!(
            declared(json!({meta::PROTOCOL_VERSION: "2026-07-28"})),
            None
        );
        assert_eq!(
            declared(json!({"_meta": {meta::PROTOCOL_VERSION: 7}})),
            None
        );
        assert_eq!(declared(json!({"_meta": null})), None);
        assert_eq!(declared(json!(["_meta"])), None);
        assert_eq!(declared_version(None), None);
        // A key spelt with escapes is the same key.
        let escaped = RawValue::from_string(
            r#"{"\u005fmeta": {"io.modelcontextprotocol/protocolVersion": "v"}}"#.to_owned(),
        )
        .unwrap();
        assert_eq!(declared_version(Some(&escaped)), Some("v".to_owned()));
    }

    #[test]
    fn headers_mirror_method_and_name() {
        let params = raw(json!({"name": "wéather", "uri": "file:///x"}));
        let h = MetaHeaders::new("tools/call", Some(&params), "2026-07-28").unwrap();
        assert_eq!(h.version, "2026-07-28");
        assert_eq!(h.method, "tools/call");
        assert_eq!(h.name.unwrap(), "=?base64?d8OpYXRoZXI=?=");
        let h = MetaHeaders::new("resources/read", Some(&params), "v").unwrap();
        assert_eq!(h.name.unwrap(), "file:///x");
        let h = MetaHeaders::new("tools/list", Some(&params), "v").unwrap();
        assert!(h.name.is_none());
        let h = MetaHeaders::new("prompts/get", Some(&raw(json!({"name": 1}))), "v").unwrap();
        assert!(h.name.is_none());
        assert!(MetaHeaders::new("ping", None, "bad\nversion").is_err());
    }

    #[test]
    fn only_era_specific_errors_prove_a_modern_server() {
        let bad = StatusCode::BAD_REQUEST;
        for code in [-32020, -32021, -32022, -32602] {
            assert!(is_per_request_refusal(bad, code), "{code}");
        }
        for code in [-32000, -32001, -32600, -32700, -32601] {
            assert!(!is_per_request_refusal(bad, code), "{code}");
        }
        assert!(is_per_request_refusal(StatusCode::NOT_FOUND, -32601));
        assert!(!is_per_request_refusal(StatusCode::NOT_FOUND, -32001));
        assert!(!is_per_request_refusal(
            StatusCode::METHOD_NOT_ALLOWED,
            -32020
        ));
    }

    #[test]
    fn a_32022_picks_the_newest_version_in_common() {
        let error = |supported: Value| {
            ErrorObject::new(UNSUPPORTED_PROTOCOL_VERSION, "unsupported")
                .with_data(raw(json!({"supported": supported, "requested": "x"})))
        };
        assert_eq!(
            choose(&error(json!(["2025-06-18", "2026-07-28"]))),
            Choice::PerRequest(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(
            choose(&error(json!(["2025-03-26", 4, "2025-06-18"]))),
            Choice::Session(ProtocolVersion::V2025_06_18)
        );
        assert_eq!(choose(&error(json!(["1999-01-01"]))), Choice::Neither);
        assert_eq!(
            choose(&ErrorObject::new(UNSUPPORTED_PROTOCOL_VERSION, "x")),
            Choice::Neither
        );
    }

    #[test]
    fn cancellations_and_resend_ids() {
        let note = Notification::new(CANCELLED, Some(raw(json!({"requestId": "a"}))));
        assert_eq!(cancelled_request(&note), Some(Id::from("a")));
        let other = Notification::new("notifications/progress", Some(raw(json!({"requestId": 1}))));
        assert_eq!(cancelled_request(&other), None);
        assert_eq!(resend_id(&Id::from(7), 2), Id::from("7~resend-2"));
        assert_eq!(resend_id(&Id::from("a"), 1), Id::from("a~resend-1"));
    }

    #[test]
    fn rpc_errors_are_read_from_single_error_responses() {
        let body = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"no session"}}"#;
        assert_eq!(rpc_error(body).unwrap().code, -32000);
        assert!(rpc_error(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_none());
        assert!(rpc_error(b"missing session id").is_none());
        assert!(rpc_error(b"").is_none());
    }

    #[test]
    fn initialize_params_carry_the_identity() {
        let params = identity().initialize_params("2025-11-25");
        let params: Value = serde_json::from_str(params.get()).unwrap();
        assert_eq!(
            params,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}}, "clientInfo": {"name": "c", "version": "1"}})
        );
        assert!(
            Identity::new("c", "1", &json!([]))
                .unwrap_err()
                .is_builder()
        );
    }
}
