//! The two metadata documents: the protected resource's (RFC 9728) and the authorization
//! server's (RFC 8414, or OpenID Connect Discovery), the fields this crate reads.

use serde::Deserialize;

/// Protected Resource Metadata (RFC 9728, section 2).
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// The resource identifier: the `resource` parameter of every request for a token.
    pub resource: String,
    /// The issuers of the authorization servers that grant tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource uses.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// Authorization Server Metadata (RFC 8414, section 2), or an OpenID Provider's.
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct ServerMetadata {
    /// The issuer identifier: equal to the one the document was asked for.
    pub issuer: String,
    /// Where the user is sent to approve.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes, refresh tokens and client credentials become tokens.
    pub token_endpoint: String,
    /// Dynamic Client Registration (RFC 7591), if offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// The grant types; absent means `authorization_code` and `implicit` (RFC 8414).
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint; absent means `client_secret_basic`.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// The PKCE methods; the MCP spec refuses to go on without `S256` among them.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Whether authorization responses carry `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// Whether a URL may serve as `client_id` (Client ID Metadata Documents).
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

impl ServerMetadata {
    /// The endpoints a 2025-03-26 server without metadata has at its root.
    pub(crate) fn fallback(issuer: &str) -> ServerMetadata {
        ServerMetadata {
            issuer: issuer.to_owned(),
            authorization_endpoint: Some(format!("{issuer}/authorize")),
            token_endpoint: format!("{issuer}/token"),
            registration_endpoint: Some(format!("{issuer}/register")),
            scopes_supported: None,
            grant_types_supported: None,
            token_endpoint_auth_methods_supported: None,
            // A 2025-03-26 server without metadata is taken to support S256, as that revision
            // required PKCE of every client.
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            authorization_response_iss_parameter_supported: false,
            client_id_metadata_document_supported: false,
        }
    }

    /// Whether the server lists `scope` in `scopes_supported`.
    pub(crate) fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == scope))
    }

    /// Whether the server accepts a token-endpoint authentication method; RFC 8414's default,
    /// when the list is absent, is `client_secret_basic` alone.
    pub(crate) fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }
}
