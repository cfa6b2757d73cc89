//! The `initialize` request and result: what starts a session, and the version it settles.

use mcp_jsonrpc::{Message, RawValue};
use serde::Deserialize;

use crate::protocol::ProtocolVersion;

/// Why an `initialize` request cannot start a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidInitialize(&'static str);

impl InvalidInitialize {
    pub(crate) fn reason(self) -> &'static str {
        self.0
    }
}

/// The params of a valid `initialize`: a `protocolVersion` string and `capabilities` and
/// `clientInfo` objects.
#[derive(Deserialize)]
struct Params<'a> {
    #[serde(rename = "protocolVersion", borrow)]
    protocol_version: Option<&'a RawValue>,
    #[serde(borrow)]
    capabilities: Option<&'a RawValue>,
    #[serde(rename = "clientInfo", borrow)]
    client_info: Option<&'a RawValue>,
}

/// The protocol version an `initialize` request asks for, as written, whether this server
/// speaks it or not.
pub(crate) fn asked_version(request: &mcp_jsonrpc::Request) -> Option<String> {
    let params: Params<'_> = request.parse_params().ok()?;
    serde_json::from_str(params.protocol_version?.get()).ok()
}

/// Checks an `initialize` request's params; returns the version it asks for if this server
/// speaks it (`None` for one it does not: the application answers with its own choice).
pub(crate) fn validate(
    request: &mcp_jsonrpc::Request,
) -> Result<Option<ProtocolVersion>, InvalidInitialize> {
    let params: Params<'_> = request
        .parse_params()
        .map_err(|_| InvalidInitialize("initialize needs params: an object"))?;
    let version = params
        .protocol_version
        .and_then(|raw| serde_json::from_str::<std::borrow::Cow<'_, str>>(raw.get()).ok())
        .ok_or(InvalidInitialize(
            "initialize needs params.protocolVersion: a string",
        ))?;
    let is_object = |raw: Option<&RawValue>| raw.is_some_and(|r| r.get().starts_with('{'));
    if !is_object(params.capabilities) {
        return Err(InvalidInitialize(
            "initialize needs params.capabilities: an object",
        ));
    }
    if !is_object(params.client_info) {
        return Err(InvalidInitialize(
            "initialize needs params.clientInfo: an object",
        ));
    }
    Ok(version.parse().ok())
}

/// The protocol version an initialize result settles, if it is one this server speaks in
/// sessions.
pub(crate) fn negotiated_version(message: &Message) -> Option<ProtocolVersion> {
    #[derive(Deserialize)]
    struct InitializeResult<'a> {
        #[serde(rename = "protocolVersion", borrow)]
        protocol_version: std::borrow::Cow<'a, str>,
    }
    let Message::Response(r) = message else {
        return None;
    };
    let result: InitializeResult<'_> = serde_json::from_str(r.result().ok()?.get()).ok()?;
    result
        .protocol_version
        .parse()
        .ok()
        .filter(|v: &ProtocolVersion| !v.is_per_request())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(params: &str) -> mcp_jsonrpc::Request {
        let json = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"initialize"{params}}}"#);
        match mcp_jsonrpc::parse(json.as_bytes()).unwrap() {
            mcp_jsonrpc::Body::Single(Message::Request(r)) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_a_valid_initialize_starts_a_session() {
        let ok = r#","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#;
        assert_eq!(
            validate(&request(ok)),
            Ok(Some(ProtocolVersion::V2025_11_25))
        );
        let unknown =
            r#","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{}}"#;
        assert_eq!(validate(&request(unknown)), Ok(None));
        for bad in [
            "",
            r#","params":{}"#,
            r#","params":[]"#,
            r#","params":{"protocolVersion":7,"capabilities":{},"clientInfo":{}}"#,
            r#","params":{"protocolVersion":"2025-11-25","clientInfo":{}}"#,
            r#","params":{"protocolVersion":"2025-11-25","capabilities":[],"clientInfo":{}}"#,
            r#","params":{"protocolVersion":"2025-11-25","capabilities":{}}"#,
            r#","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":"me"}"#,
        ] {
            assert!(validate(&request(bad)).is_err(), "{bad}");
        }
    }
}
