//! The grants: the authorization code with PKCE through an [`Interaction`], client
//! credentials, and refresh (the JWT-bearer ones are `federation`'s); each asks the token
//! endpoint through [`TokenRequest`].

use url::Url;

use crate::discovery::Discovered;
use crate::dpop::DpopKey;
use crate::error::{Error, ErrorKind};
use crate::http::{Http, check_secure};
use crate::interaction::Interaction;
use crate::pkce::{Pkce, random_token};
use crate::registration::{PrivateKeyJwt, Registration};
use crate::token::{TokenRequest, Tokens};

/// What every grant needs: the client, where it asks, and for what.
pub(crate) struct Grant<'a> {
    pub(crate) http: &'a Http,
    pub(crate) discovered: &'a Discovered,
    pub(crate) registration: &'a Registration,
    pub(crate) key: Option<&'a PrivateKeyJwt>,
    pub(crate) scope: Option<&'a str>,
    /// The key the tokens are to be bound to with DPoP, if any.
    pub(crate) dpop: Option<&'a DpopKey>,
}

impl Grant<'_> {
    pub(crate) fn token_request(&self) -> TokenRequest<'_> {
        TokenRequest {
            http: self.http,
            server: &self.discovered.server,
            registration: self.registration,
            key: self.key,
            scope: self.scope,
            dpop: self.dpop,
        }
    }

    /// The authorization-code grant: the user approves through `interaction`, the code and
    /// the PKCE verifier become tokens.
    pub(crate) async fn authorization_code(
        &self,
        interaction: &dyn Interaction,
    ) -> Result<Tokens, Error> {
        let server = &self.discovered.server;
        let supports_s256 = server
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"));
        if !supports_s256 {
            // MCP 2025-11-25: no PKCE support advertised, no authorization.
            return Err(Error::new(ErrorKind::Authorization).detail("server does not offer S256"));
        }
        let pkce = Pkce::new()?;
        let state = random_token()?;
        let url = self.authorization_url(interaction.redirect_uri(), &pkce, &state)?;
        tracing::debug!(issuer = %server.issuer, scope = ?self.scope, "asking the user to authorize");
        let back = interaction
            .authorize(url)
            .await
            .map_err(|e| Error::new(ErrorKind::Authorization).with(e))?;
        let code = self.check_response(&back, &state)?;
        let redirect_uri = interaction.redirect_uri();
        let grant = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pkce.verifier.expose()),
            ("resource", self.discovered.resource.as_str()),
        ];
        self.token_request().send(&grant).await
    }

    fn authorization_url(
        &self,
        redirect_uri: &str,
        pkce: &Pkce,
        state: &str,
    ) -> Result<Url, Error> {
        let server = &self.discovered.server;
        let endpoint = server
            .authorization_endpoint
            .as_deref()
            .ok_or_else(|| Error::new(ErrorKind::Discovery).detail("no authorization_endpoint"))?;
        let mut url = Url::parse(endpoint).map_err(|e| Error::new(ErrorKind::Discovery).with(e))?;
        check_secure(&url)?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.registration.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", state)
                .append_pair("resource", &self.discovered.resource);
            if let Some(scope) = self.scope {
                query.append_pair("scope", scope);
            }
        }
        Ok(url)
    }

    /// The code of an authorization response, once its `state` and `iss` are checked
    /// (RFC 6749, section 4.1.2; RFC 9207, section 2.4: `iss` compared as a string).
    fn check_response(&self, back: &Url, state: &str) -> Result<String, Error> {
        let param = |name: &str| {
            back.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        let server = &self.discovered.server;
        match param("iss") {
            Some(iss) if iss != server.issuer => {
                return Err(Error::new(ErrorKind::IssuerMismatch).detail(iss));
            }
            None if server.authorization_response_iss_parameter_supported => {
                return Err(Error::new(ErrorKind::IssuerMismatch).detail("no iss in the response"));
            }
            _ => {}
        }
        if param("state").as_deref() != Some(state) {
            return Err(Error::new(ErrorKind::Authorization).detail("state does not match"));
        }
        if let Some(error) = param("error") {
            return Err(Error::new(ErrorKind::Authorization).detail(error));
        }
        param("code").ok_or_else(|| Error::new(ErrorKind::Authorization).detail("no code"))
    }

    /// The client-credentials grant (RFC 6749, section 4.4), for a client acting for itself.
    pub(crate) async fn client_credentials(&self) -> Result<Tokens, Error> {
        let mut grant = vec![
            ("grant_type", "client_credentials"),
            ("resource", self.discovered.resource.as_str()),
        ];
        if let Some(scope) = self.scope {
            grant.push(("scope", scope));
        }
        self.token_request().send(&grant).await
    }

    /// A refresh (RFC 6749, section 6); the refresh token is kept if no new one comes.
    pub(crate) async fn refresh(&self, tokens: &Tokens) -> Result<Tokens, Error> {
        let refresh = tokens
            .refresh_token
            .as_ref()
            .ok_or_else(|| Error::new(ErrorKind::Token).detail("no refresh token"))?;
        let grant = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.expose()),
            ("resource", self.discovered.resource.as_str()),
        ];
        let mut fresh = self.token_request().send(&grant).await?;
        if fresh.refresh_token.is_none() {
            fresh.refresh_token = tokens.refresh_token.clone();
        }
        if fresh.scope.is_none() {
            fresh.scope = tokens.scope.clone();
        }
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::ServerMetadata;

    fn discovered(iss_supported: bool) -> Discovered {
        let mut server = ServerMetadata::fallback("https://as.example");
        server.authorization_response_iss_parameter_supported = iss_supported;
        server.code_challenge_methods_supported = Some(vec!["S256".into()]);
        Discovered {
            resource: "https://r.example/mcp".into(),
            resource_scopes: None,
            server,
        }
    }

    /// An HTTP side that these tests never use to send.
    fn offline() -> Http {
        let client = mcp_http_client::Client::builder().https(false).build();
        Http::new(
            std::sync::Arc::new(client.unwrap()),
            std::time::Duration::from_secs(1),
        )
    }

    fn check(discovered: &Discovered, query: &str) -> Result<String, ErrorKind> {
        let http = offline();
        let registration = Registration::new("c");
        let grant = Grant {
            http: &http,
            discovered,
            registration: &registration,
            key: None,
            scope: None,
            dpop: None,
        };
        let back = Url::parse(&format!("http://127.0.0.1:1/callback?{query}")).unwrap();
        grant.check_response(&back, "s").map_err(|e| e.kind())
    }

    #[test]
    fn issuer_checks_of_rfc_9207() {
        let advertised = discovered(true);
        let silent = discovered(false);
        let iss = "iss=https%3A%2F%2Fas.example";
        assert_eq!(
            check(&advertised, &format!("code=c&state=s&{iss}")),
            Ok("c".into())
        );
        assert_eq!(
            check(&advertised, "code=c&state=s"),
            Err(ErrorKind::IssuerMismatch)
        );
        assert_eq!(check(&silent, "code=c&state=s"), Ok("c".into()));
        let evil = "code=c&state=s&iss=https%3A%2F%2Fevil.example";
        assert_eq!(check(&silent, evil), Err(ErrorKind::IssuerMismatch));
        let slash = "code=c&state=s&iss=https%3A%2F%2Fas.example%2F";
        assert_eq!(check(&advertised, slash), Err(ErrorKind::IssuerMismatch));
    }

    #[test]
    fn state_and_errors() {
        let silent = discovered(false);
        assert_eq!(
            check(&silent, "code=c&state=t"),
            Err(ErrorKind::Authorization)
        );
        assert_eq!(check(&silent, "code=c"), Err(ErrorKind::Authorization));
        assert_eq!(
            check(&silent, "error=access_denied&state=s"),
            Err(ErrorKind::Authorization)
        );
        assert_eq!(check(&silent, "state=s"), Err(ErrorKind::Authorization));
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_resource_and_scope() {
        let http = offline();
        let registration = Registration::new("client 1");
        let discovered = discovered(false);
        let grant = Grant {
            http: &http,
            discovered: &discovered,
            registration: &registration,
            key: None,
            scope: Some("a b"),
            dpop: None,
        };
        let pkce = Pkce::new().unwrap();
        let url = grant
            .authorization_url("http://127.0.0.1:9/callback", &pkce, "st")
            .unwrap();
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("client_id"), Some("client 1"));
        assert_eq!(get("code_challenge"), Some(pkce.challenge.as_str()));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("state"), Some("st"));
        assert_eq!(get("resource"), Some("https://r.example/mcp"));
        assert_eq!(get("scope"), Some("a b"));
    }
}
