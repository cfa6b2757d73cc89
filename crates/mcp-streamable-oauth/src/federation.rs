//! Grants on an identity asserted elsewhere, RFC 7523's JWT-bearer grant: workload identity
//! federation, the JWT a workload's platform issued it, and enterprise-managed authorization
//! (SEP-990), an ID-JAG the enterprise's identity provider gives for the user's ID token
//! (RFC 8693 token exchange).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Deserialize;

use crate::discovery::Discovered;
use crate::error::{BoxError, Error, ErrorKind};
use crate::grant::Grant;
use crate::http::Http;
use crate::metadata::ServerMetadata;
use crate::registration::Registration;
use crate::secret::Secret;
use crate::token::{TokenRequest, Tokens};

/// The grant type of RFC 7523, section 2.1.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The grant type of RFC 8693.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an Identity Assertion JWT Authorization Grant.
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The token type of an OpenID Connect ID token (RFC 8693, section 3).
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";

/// The future an [`Assertion`] returns.
pub type AssertionFuture = Pin<Box<dyn Future<Output = Result<Secret, BoxError>> + Send>>;

/// Gives a JWT each time a grant needs one: a workload's identity token (read anew each time,
/// as platforms rotate them), or the user's ID token from the enterprise's identity provider.
///
/// A [`Secret`] is an assertion that never changes; closures returning a future of one are
/// assertions too:
///
/// ```
/// use mcp_streamable_oauth::{BoxError, OAuth, Registration, Secret};
///
/// let oauth = OAuth::builder("https://mcp.example.com/mcp")
///     .preregistered(Registration::new("my-workload"), None)
///     .workload_identity(|| async {
///         let jwt = std::fs::read_to_string("/var/run/secrets/tokens/mcp")?;
///         Ok::<_, BoxError>(Secret::new(jwt.trim()))
///     })
///     .build()?;
/// # drop(oauth);
/// # Ok::<(), mcp_streamable_oauth::Error>(())
/// ```
pub trait Assertion: Send + Sync + 'static {
    /// The JWT, as fresh as it can be.
    fn assertion(&self) -> AssertionFuture;
}

impl Assertion for Secret {
    fn assertion(&self) -> AssertionFuture {
        let jwt = self.clone();
        Box::pin(async move { Ok(jwt) })
    }
}

impl<F, Fut> Assertion for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Secret, BoxError>> + Send + 'static,
{
    fn assertion(&self) -> AssertionFuture {
        Box::pin(self())
    }
}

/// The enterprise's identity provider, for enterprise-managed authorization: where the user's
/// ID token is exchanged (RFC 8693) for an ID-JAG, an identity assertion for the MCP server's
/// authorization server, and as which client.
#[derive(Clone)]
pub struct IdentityProvider {
    token_endpoint: String,
    client: Registration,
    id_token: Arc<dyn Assertion>,
}

impl IdentityProvider {
    /// The identity provider whose token endpoint is `token_endpoint`, where the program is
    /// registered as `client` (a secret goes as `client_secret_basic`, else the `client_id`
    /// goes in the form), and the user's ID token from it (the single sign-on's result).
    pub fn new(
        token_endpoint: &str,
        client: Registration,
        id_token: impl Assertion,
    ) -> IdentityProvider {
        IdentityProvider {
            token_endpoint: token_endpoint.to_owned(),
            client,
            id_token: Arc::new(id_token),
        }
    }

    /// An ID-JAG for the authorization server and resource `discovered` names.
    async fn exchange(
        &self,
        http: &Http,
        discovered: &Discovered,
        scope: Option<&str>,
    ) -> Result<Secret, Error> {
        #[derive(Deserialize)]
        struct Exchanged {
            access_token: Secret,
            issued_token_type: String,
        }
        let id_token = self
            .id_token
            .assertion()
            .await
            .map_err(|e| Error::new(ErrorKind::Authorization).with(e))?;
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ID_JAG),
            ("audience", discovered.server.issuer.as_str()),
            ("resource", discovered.resource.as_str()),
            ("subject_token", id_token.expose()),
            ("subject_token_type", ID_TOKEN),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope));
        }
        let mut idp = ServerMetadata::fallback(&self.token_endpoint);
        idp.token_endpoint = self.token_endpoint.clone();
        let request = TokenRequest {
            http,
            server: &idp,
            registration: &self.client,
            key: None,
            scope,
            dpop: None,
        };
        tracing::debug!(idp = %self.token_endpoint, "exchanging the ID token for an ID-JAG");
        let exchanged: Exchanged = request.answer(&form).await?.json()?;
        if exchanged.issued_token_type != ID_JAG {
            return Err(Error::new(ErrorKind::Token).detail(exchanged.issued_token_type));
        }
        Ok(exchanged.access_token)
    }
}

impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("token_endpoint", &self.token_endpoint)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl Grant<'_> {
    /// The JWT-bearer grant (RFC 7523, section 2.1) with the JWT `assertion` gives.
    pub(crate) async fn jwt_bearer(&self, assertion: &dyn Assertion) -> Result<Tokens, Error> {
        let jwt = assertion
            .assertion()
            .await
            .map_err(|e| Error::new(ErrorKind::Authorization).with(e))?;
        self.with_assertion(&jwt).await
    }

    /// Enterprise-managed authorization: an ID-JAG from `idp`, then the JWT-bearer grant
    /// with it.
    pub(crate) async fn enterprise_managed(&self, idp: &IdentityProvider) -> Result<Tokens, Error> {
        let id_jag = idp.exchange(self.http, self.discovered, self.scope).await?;
        self.with_assertion(&id_jag).await
    }

    async fn with_assertion(&self, jwt: &Secret) -> Result<Tokens, Error> {
        let mut grant = vec![
            ("grant_type", JWT_BEARER),
            ("assertion", jwt.expose()),
            ("resource", self.discovered.resource.as_str()),
        ];
        if let Some(scope) = self.scope {
            grant.push(("scope", scope));
        }
        self.token_request().send(&grant).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn secrets_and_closures_are_assertions() {
        let fixed = Secret::new("jwt-1");
        assert_eq!(fixed.assertion().await.unwrap().expose(), "jwt-1");
        let read = || async { Ok::<_, BoxError>(Secret::new("jwt-2")) };
        assert_eq!(read.assertion().await.unwrap().expose(), "jwt-2");
    }

    #[test]
    fn an_identity_provider_shows_no_secret() {
        let client = Registration::with_secret("idp-client", "idp-secret");
        let idp = IdentityProvider::new("https://idp.example/token", client, Secret::new("id"));
        let shown = format!("{idp:?}");
        assert!(shown.contains("idp-client"), "{shown}");
        assert!(!shown.contains("idp-secret"), "{shown}");
    }
}
