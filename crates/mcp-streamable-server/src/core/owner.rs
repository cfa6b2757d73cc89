//! Who a session belongs to, as an upstream layer established it, and where a request came
//! from.

use std::fmt;
use std::sync::Arc;

/// The identity of whoever makes a request, put in the request's extensions by a layer in
/// front of the service (authentication middleware). A session remembers the owner of the
/// request that started it, and a request carrying another owner, or none, does not find it:
/// it is answered as an unknown session (404), never served, so that a session id learnt by
/// someone else is of no use to them.
///
/// ```
/// use mcp_streamable_server::SessionOwner;
///
/// let mut request = http::Request::new(());
/// // What an authentication layer does once it has verified who is calling:
/// request.extensions_mut().insert(SessionOwner::new("user:alice"));
/// # let _ = request;
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SessionOwner(Arc<str>);

impl SessionOwner {
    /// An owner named `key`: anything that tells principals apart (a subject, an issuer and
    /// subject, a client id).
    pub fn new(key: impl Into<Arc<str>>) -> Self {
        SessionOwner(key.into())
    }

    /// The owner's key.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn key(&self) -> &Arc<str> {
        &self.0
    }
}

/// The owner of a verified principal's sessions (feature `auth`): its key (issuer, subject,
/// client) written as the JSON array `[issuer, subject, client]`, `null` for what is unknown,
/// so that two keys make one owner only when they are equal; a principal whose token is bound
/// to a DPoP key (`jkt`, the key's thumbprint) adds it, `[issuer, subject, client, jkt]`, so
/// that its sessions stay with that key (A9).
///
/// The service takes this owner from a request's
/// [`Principal`](mcp_streamable_auth::Principal) by itself when no `SessionOwner` is in the
/// request's extensions.
///
/// ```
/// use mcp_streamable_auth::Principal;
/// use mcp_streamable_server::SessionOwner;
///
/// let alice = Principal::new("alice").with_issuer("https://auth.example.com");
/// let owner = SessionOwner::from(&alice.key());
/// assert_eq!(owner.as_str(), r#"["https://auth.example.com","alice",null]"#);
/// ```
#[cfg(feature = "auth")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
impl From<&mcp_streamable_auth::PrincipalKey> for SessionOwner {
    fn from(key: &mcp_streamable_auth::PrincipalKey) -> Self {
        owner_of(key.issuer(), key.subject(), key.client_id(), key.jkt())
    }
}

/// The owner of [`Principal::key`](mcp_streamable_auth::Principal::key), read from the
/// principal without copying its key first: what every request of a protected session does.
#[cfg(feature = "auth")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
impl From<&mcp_streamable_auth::Principal> for SessionOwner {
    fn from(principal: &mcp_streamable_auth::Principal) -> Self {
        owner_of(
            principal.issuer.as_deref(),
            &principal.subject,
            principal.client_id.as_deref(),
            principal.jkt.as_deref(),
        )
    }
}

/// `[issuer, subject, client]` as JSON, and the DPoP key's thumbprint after them when the
/// token is bound to one: two different keys never make one owner.
#[cfg(feature = "auth")]
fn owner_of(
    issuer: Option<&str>,
    subject: &str,
    client: Option<&str>,
    jkt: Option<&str>,
) -> SessionOwner {
    // Strings and nulls always serialize.
    let json = match jkt {
        Some(jkt) => serde_json::to_string(&(issuer, subject, client, jkt)),
        None => serde_json::to_string(&(issuer, subject, client)),
    };
    SessionOwner::new(json.unwrap_or_default())
}

impl fmt::Debug for SessionOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SessionOwner").field(&&*self.0).finish()
    }
}

/// The address of the client's end of the connection a request came on, in the request's
/// extensions: what tells clients apart for [`Config::max_sessions_per_client`](crate::Config::max_sessions_per_client)
/// when no [`SessionOwner`] says who calls. The crate's `serve` inserts it; with another
/// server, insert it yourself (behind a reverse proxy, the forwarded address).
///
/// ```
/// use mcp_streamable_server::PeerAddr;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(PeerAddr("192.0.2.7:51234".parse().unwrap()));
/// # let _ = request;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerAddr(pub std::net::SocketAddr);
