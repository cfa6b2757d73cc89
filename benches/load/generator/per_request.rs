//! The per-request protocol of 2026-07-28 (SPEC M1-M4) as the load generator speaks it: no
//! `initialize` and no session; every request names its protocol version, the client's
//! capabilities and the client in `params._meta`, and its headers mirror the body
//! (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for `tools/call`).

use http::HeaderValue;
use mcp_streamable_protocol::{ProtocolVersion, meta};

/// The version every per-request request names, in `_meta` and in its header.
pub(crate) const VERSION: ProtocolVersion = ProtocolVersion::LATEST_PER_REQUEST;

/// The `"_meta":{...}` member every request's params end with: the version, empty client
/// capabilities and the client's name. Written last in `params`, after `arguments`, so that
/// the ceiling's string search finds the argument's `"text"` first.
pub(crate) fn meta_member() -> String {
    format!(
        r#""_meta":{{"{}":"{}","{}":{{}},"{}":{{"name":"mcp-load","version":"0.0.0"}}}}"#,
        meta::PROTOCOL_VERSION,
        VERSION.as_str(),
        meta::CLIENT_CAPABILITIES,
        meta::CLIENT_INFO,
    )
}

/// The `MCP-Protocol-Version` header value of every request.
pub(crate) fn version_header() -> HeaderValue {
    HeaderValue::from_static(VERSION.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meta_member_is_json_naming_the_version_capabilities_and_client() {
        let object: serde_json::Value =
            serde_json::from_str(&format!("{{{}}}", meta_member())).unwrap();
        let m = &object["_meta"];
        assert_eq!(m[meta::PROTOCOL_VERSION], "2026-07-28");
        assert!(m[meta::CLIENT_CAPABILITIES].is_object());
        assert_eq!(m[meta::CLIENT_INFO]["name"], "mcp-load");
        assert_eq!(version_header(), "2026-07-28");
    }
}
