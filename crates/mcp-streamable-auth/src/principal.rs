//! Who a request acts for, once its token is verified.

use std::time::SystemTime;

/// The holder of a verified access token: who it is, through which client, with which scopes.
///
/// A [`TokenVerifier`](crate::TokenVerifier) builds one; the [`Guard`](crate::Guard) checks its
/// scopes and [`RequireBearer`](crate::RequireBearer) puts it into the request's extensions,
/// where a handler finds it (`request.extensions().get::<Principal>()`, or axum's
/// `Extension<Principal>`).
///
/// ```
/// use mcp_streamable_auth::Principal;
///
/// let alice = Principal::new("alice")
///     .with_issuer("https://auth.example.com")
///     .with_client_id("cli")
///     .with_scopes(["mcp:read", "mcp:write"]);
/// assert!(alice.has_scope("mcp:read"));
/// assert_eq!(alice.key(), Principal::new("alice").with_issuer("https://auth.example.com").with_client_id("cli").key());
/// assert_ne!(alice.key(), Principal::new("alice").with_issuer("https://other.example.com").with_client_id("cli").key());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// The subject (`sub`): the user, or the client itself in a client-credentials grant.
    /// Unique within its issuer.
    pub subject: String,
    /// The issuer (`iss`), when the verifier knows it.
    pub issuer: Option<String>,
    /// The OAuth client the token was issued to (`client_id`, or `azp`), when known.
    pub client_id: Option<String>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When the token expires, when known.
    pub expires_at: Option<SystemTime>,
    /// The audiences (`aud`) the token was issued for; under RFC 8707 they include this
    /// server's resource URL.
    pub audience: Vec<String>,
    /// The key the token is bound to (RFC 9449 `cnf.jkt`): the base64url SHA-256 thumbprint
    /// (RFC 7638) of a public key whose holder alone may use the token, with a DPoP proof. A
    /// verifier sets it from the token; the guard then accepts the token only with a proof signed
    /// by that key (never as `Bearer`), so on a request the guard let through it is the key of
    /// the request's proof. `None` for a bearer token.
    pub jkt: Option<String>,
}

/// The identity a session is bound to: issuer, subject, client and, for a DPoP-bound token, the
/// key it is bound to.
///
/// A server records the key of the principal that created a session and treats the session as
/// unknown (a 404, so the client starts a new one) when a request for it carries a token whose
/// key differs. The key survives token refresh (the same user through the same client, and the
/// same DPoP key), but not a change of user, of client, of issuer or of DPoP key: a session
/// started with a DPoP-bound token stays with the holder of that key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PrincipalKey {
    issuer: Option<String>,
    subject: String,
    client_id: Option<String>,
    jkt: Option<String>,
}

impl Principal {
    /// A principal for `subject`, with nothing else known yet.
    pub fn new(subject: impl Into<String>) -> Principal {
        Principal {
            subject: subject.into(),
            issuer: None,
            client_id: None,
            scopes: Vec::new(),
            expires_at: None,
            audience: Vec::new(),
            jkt: None,
        }
    }

    /// Sets the issuer.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Principal {
        self.issuer = Some(issuer.into());
        self
    }

    /// Sets the client id.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Principal {
        self.client_id = Some(client_id.into());
        self
    }

    /// Sets the scopes granted.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Principal
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the expiry.
    pub fn with_expires_at(mut self, expires_at: SystemTime) -> Principal {
        self.expires_at = Some(expires_at);
        self
    }

    /// Sets the audiences.
    pub fn with_audience<I, S>(mut self, audience: I) -> Principal
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.audience = audience.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the key the token is bound to (`cnf.jkt`): see [`jkt`](Principal::jkt).
    pub fn with_jkt(mut self, jkt: impl Into<String>) -> Principal {
        self.jkt = Some(jkt.into());
        self
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }

    /// The identity to bind a session to; see [`PrincipalKey`].
    pub fn key(&self) -> PrincipalKey {
        PrincipalKey {
            issuer: self.issuer.clone(),
            subject: self.subject.clone(),
            client_id: self.client_id.clone(),
            jkt: self.jkt.clone(),
        }
    }
}

impl PrincipalKey {
    /// The issuer, when the verifier knew it.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }

    /// The subject.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The OAuth client, when the verifier knew it.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The thumbprint of the DPoP key the token is bound to, for a DPoP-bound token.
    pub fn jkt(&self) -> Option<&str> {
        self.jkt.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_ignores_what_changes_on_refresh() {
        let before = Principal::new("alice")
            .with_issuer("https://as")
            .with_client_id("c")
            .with_scopes(["a"])
            .with_expires_at(SystemTime::UNIX_EPOCH);
        let after = Principal::new("alice")
            .with_issuer("https://as")
            .with_client_id("c")
            .with_scopes(["a", "b"])
            .with_expires_at(SystemTime::now());
        assert_eq!(before.key(), after.key());
    }

    #[test]
    fn the_key_tells_users_clients_and_issuers_apart() {
        let base = Principal::new("alice")
            .with_issuer("https://as")
            .with_client_id("c");
        let others = [
            Principal::new("bob")
                .with_issuer("https://as")
                .with_client_id("c"),
            Principal::new("alice")
                .with_issuer("https://as2")
                .with_client_id("c"),
            Principal::new("alice")
                .with_issuer("https://as")
                .with_client_id("d"),
            Principal::new("alice").with_client_id("c"),
            Principal::new("alice").with_issuer("https://as"),
            base.clone().with_jkt("key-1"),
        ];
        for other in others {
            assert_ne!(base.key(), other.key(), "{other:?}");
        }
    }

    #[test]
    fn a_dpop_bound_principal_keeps_its_key_across_refresh_and_not_across_keys() {
        let bound = |jkt: &str, scope: &str| {
            Principal::new("alice")
                .with_issuer("https://as")
                .with_client_id("c")
                .with_scopes([scope])
                .with_jkt(jkt)
        };
        assert_eq!(bound("key-1", "a").key(), bound("key-1", "b").key());
        assert_ne!(bound("key-1", "a").key(), bound("key-2", "a").key());
        assert_eq!(bound("key-1", "a").key().jkt(), Some("key-1"));
    }
}
