//! Who a session belongs to, as an upstream layer established it.

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

impl fmt::Debug for SessionOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SessionOwner").field(&&*self.0).finish()
    }
}
