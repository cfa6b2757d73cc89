//! The request headers every session-based method checks the same way (S6, S8), and who is
//! asking.

use crate::core::owner::{PeerAddr, SessionOwner};
use crate::http::error::Reject;
use crate::protocol::transport::TransportHeaders;
use crate::protocol::{ProtocolVersion, dates, is_valid_session_id};

/// The `MCP-Protocol-Version` header of a session-based request, checked (S8).
pub(crate) fn protocol_version(
    headers: &TransportHeaders,
) -> Result<Option<ProtocolVersion>, Reject> {
    let Some(v) = headers
        .version
        .get()
        .map_err(|()| Reject::bad_request("malformed MCP-Protocol-Version header"))?
    else {
        return Ok(None);
    };
    match v.parse::<ProtocolVersion>() {
        Ok(version) if !version.is_per_request() => Ok(Some(version)),
        _ => Err(Reject::bad_request(format!(
            "unsupported MCP-Protocol-Version {v:?}; supported: {}",
            dates(ProtocolVersion::SESSION)
        ))),
    }
}

/// The `Mcp-Session-Id` header, checked for form (S6).
pub(crate) fn session_id(headers: &TransportHeaders) -> Result<Option<&str>, Reject> {
    match headers.session_id.get() {
        Err(()) => Err(Reject::bad_request("malformed Mcp-Session-Id header")),
        Ok(Some(id)) if !is_valid_session_id(id.as_bytes()) => Err(Reject::bad_request(
            "malformed Mcp-Session-Id header: not visible ASCII",
        )),
        Ok(id) => Ok(id),
    }
}

/// The client a new session counts against (S18): its owner when known, else the IP address of
/// the connection (`PeerAddr`), else none. Prefixed, so that an owner never counts as an
/// address.
pub(crate) fn client(
    parts: &http::request::Parts,
    owner: Option<&SessionOwner>,
) -> Option<std::sync::Arc<str>> {
    if let Some(owner) = owner {
        return Some(format!("owner {}", owner.as_str()).into());
    }
    let peer = parts.extensions.get::<PeerAddr>()?;
    Some(format!("ip {}", peer.0.ip()).into())
}

/// Who makes the request, as a layer in front of the service put it in the extensions: a
/// [`SessionOwner`], or else (feature `auth`) the key of a verified
/// [`Principal`](mcp_streamable_auth::Principal) (A4).
pub(crate) fn owner(parts: &http::request::Parts) -> Option<SessionOwner> {
    if let Some(owner) = parts.extensions.get::<SessionOwner>() {
        return Some(owner.clone());
    }
    #[cfg(feature = "auth")]
    if let Some(principal) = parts.extensions.get::<mcp_streamable_auth::Principal>() {
        return Some(SessionOwner::from(principal));
    }
    None
}

/// The id of the session a GET or DELETE names (S7, S8).
pub(crate) fn named<'a>(headers: &'a TransportHeaders, method: &str) -> Result<&'a str, Reject> {
    protocol_version(headers)?;
    session_id(headers)?
        .ok_or_else(|| Reject::bad_request(format!("{method} needs an Mcp-Session-Id header")))
}
