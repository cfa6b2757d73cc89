//! The client's identity at an authorization server: pre-registered credentials, a Client ID
//! Metadata Document URL, or Dynamic Client Registration (RFC 7591), in the MCP spec's order of
//! preference.

use std::fmt;
use std::str::FromStr;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};
use serde_json::json;
use url::Url;

use crate::error::{Error, ErrorKind};
use crate::http::{Http, check_secure};
use crate::metadata::ServerMetadata;
use crate::secret::Secret;

/// A client registered at an authorization server, as a [`TokenStore`](crate::TokenStore)
/// keeps it (by issuer: a registration is never shown to another server).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Registration {
    /// The client identifier.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// The token-endpoint authentication method the server registered the client with.
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URIs registered.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// Whether the client registered itself (RFC 7591), so may register again when the server
    /// forgets it.
    #[serde(default)]
    pub dynamic: bool,
}

impl Registration {
    /// A pre-registered public client.
    pub fn new(client_id: impl Into<String>) -> Registration {
        Registration {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            redirect_uris: Vec::new(),
            dynamic: false,
        }
    }

    /// A pre-registered confidential client.
    pub fn with_secret(client_id: impl Into<String>, secret: impl Into<Secret>) -> Registration {
        Registration {
            client_secret: Some(secret.into()),
            ..Registration::new(client_id)
        }
    }
}

/// A private key the client signs its token-endpoint assertions with (`private_key_jwt`,
/// RFC 7523), for the client-credentials grant of machines.
#[derive(Clone)]
pub struct PrivateKeyJwt {
    key: EncodingKey,
    algorithm: Algorithm,
}

impl PrivateKeyJwt {
    /// A key from its PEM (PKCS#8 for EC and Ed25519, PKCS#1 or #8 for RSA) and the JWS
    /// algorithm name (`ES256`, `RS256`, `EdDSA`...).
    pub fn from_pem(pem: &str, algorithm: &str) -> Result<PrivateKeyJwt, Error> {
        let config = |e: jsonwebtoken::errors::Error| Error::new(ErrorKind::Config).with(e);
        let algorithm = Algorithm::from_str(algorithm).map_err(config)?;
        let pem = pem.as_bytes();
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem),
            _ => return Err(Error::new(ErrorKind::Config).detail("not an asymmetric algorithm")),
        }
        .map_err(config)?;
        Ok(PrivateKeyJwt { key, algorithm })
    }

    pub(crate) fn sign(&self, claims: &impl Serialize) -> Result<Secret, Error> {
        jsonwebtoken::encode(&Header::new(self.algorithm), claims, &self.key)
            .map(Secret::new)
            .map_err(|e| Error::new(ErrorKind::Config).with(e))
    }
}

impl fmt::Debug for PrivateKeyJwt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateKeyJwt")
            .field("algorithm", &self.algorithm)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// Who the client is, as configured: the sources of a [`Registration`].
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientIdentity {
    /// Pre-registered credentials, and the issuer they belong to (any, if `None`).
    pub(crate) preregistered: Option<(Registration, Option<String>)>,
    /// The URL of the client's metadata document (its `client_id` where servers take one).
    pub(crate) metadata_url: Option<String>,
    /// The `client_name` of a dynamic registration.
    pub(crate) name: String,
    /// The grant types the client uses, for its registration.
    pub(crate) grant_types: Vec<&'static str>,
}

impl ClientIdentity {
    /// The pre-registered client for `issuer`, if there is one.
    pub(crate) fn preregistered_for(&self, issuer: &str) -> Option<Registration> {
        match &self.preregistered {
            Some((registration, None)) => Some(registration.clone()),
            Some((registration, Some(at))) if at == issuer => Some(registration.clone()),
            _ => None,
        }
    }

    /// The client metadata document's URL as `client_id`, if the server takes one.
    pub(crate) fn metadata_document(&self, server: &ServerMetadata) -> Option<Registration> {
        let url = self.metadata_url.as_ref()?;
        server.client_id_metadata_document_supported.then(|| {
            let mut registration = Registration::new(url.clone());
            registration.token_endpoint_auth_method = Some("none".into());
            registration
        })
    }

    /// Registers the client (RFC 7591) with the redirect URI given.
    pub(crate) async fn register(
        &self,
        http: &Http,
        server: &ServerMetadata,
        redirect_uri: Option<&str>,
    ) -> Result<Registration, Error> {
        let endpoint = server.registration_endpoint.as_deref().ok_or_else(|| {
            Error::new(ErrorKind::Registration).detail("no registration endpoint")
        })?;
        let endpoint =
            Url::parse(endpoint).map_err(|e| Error::new(ErrorKind::Discovery).with(e))?;
        check_secure(&endpoint)?;
        let request = self.registration_request(server, redirect_uri);
        let answer = http.post_json(&endpoint, &request).await?;
        if !answer.status.is_success() {
            return Err(Error::new(ErrorKind::Registration).detail(answer.status.to_string()));
        }
        let mut registration: Registration = answer.json()?;
        registration.dynamic = true;
        if registration.redirect_uris.is_empty() {
            registration.redirect_uris = redirect_uri.into_iter().map(str::to_owned).collect();
        }
        tracing::debug!(issuer = %server.issuer, client_id = %registration.client_id, "registered");
        Ok(registration)
    }

    fn registration_request(
        &self,
        server: &ServerMetadata,
        redirect_uri: Option<&str>,
    ) -> serde_json::Value {
        // A public client where the server takes one; else a secret, sent as the server likes.
        let method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| server.supports_auth_method(m))
            .unwrap_or("client_secret_basic");
        let mut request = json!({
            "client_name": self.name,
            "grant_types": self.grant_types,
            "token_endpoint_auth_method": method,
        });
        if let Some(uri) = redirect_uri {
            request["redirect_uris"] = json!([uri]);
            request["response_types"] = json!(["code"]);
            // SEP-837: a loopback redirect is a native application's.
            let native = Url::parse(uri).is_ok_and(|u| u.scheme() != "https");
            request["application_type"] = json!(if native { "native" } else { "web" });
        }
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preregistered_clients_are_bound_to_their_issuer() {
        let identity = ClientIdentity {
            preregistered: Some((Registration::new("c"), Some("https://a.example".into()))),
            ..ClientIdentity::default()
        };
        assert!(identity.preregistered_for("https://a.example").is_some());
        assert!(identity.preregistered_for("https://b.example").is_none());
    }

    #[test]
    fn metadata_documents_only_where_supported() {
        let identity = ClientIdentity {
            metadata_url: Some("https://app.example/client.json".into()),
            ..ClientIdentity::default()
        };
        let mut server = ServerMetadata::fallback("https://as.example");
        assert!(identity.metadata_document(&server).is_none());
        server.client_id_metadata_document_supported = true;
        let registration = identity.metadata_document(&server).unwrap();
        assert_eq!(registration.client_id, "https://app.example/client.json");
    }

    #[test]
    fn a_registration_asks_for_a_public_native_client_where_it_can() {
        let identity = ClientIdentity {
            name: "app".into(),
            grant_types: vec!["authorization_code", "refresh_token"],
            ..ClientIdentity::default()
        };
        let mut server = ServerMetadata::fallback("https://as.example");
        server.token_endpoint_auth_methods_supported = Some(vec!["none".into()]);
        let request = identity.registration_request(&server, Some("http://127.0.0.1:5/callback"));
        assert_eq!(request["token_endpoint_auth_method"], "none");
        assert_eq!(request["application_type"], "native");
        assert_eq!(
            request["grant_types"],
            json!(["authorization_code", "refresh_token"])
        );
        server.token_endpoint_auth_methods_supported = Some(vec!["client_secret_post".into()]);
        let request = identity.registration_request(&server, None);
        assert_eq!(request["token_endpoint_auth_method"], "client_secret_post");
        assert!(request.get("redirect_uris").is_none());
    }

    #[test]
    fn secrets_are_redacted() {
        let registration = Registration::with_secret("id", "s3cret-value");
        let shown = format!("{registration:?}");
        assert!(shown.contains("\"id\""), "{shown}");
        assert!(!shown.contains("s3cret-value"), "{shown}");
    }

    #[test]
    fn keys_are_redacted_and_checked() {
        assert_eq!(
            PrivateKeyJwt::from_pem("junk", "ES256").unwrap_err().kind(),
            ErrorKind::Config
        );
        assert!(PrivateKeyJwt::from_pem("junk", "HS256").is_err());
    }
}
