//! The guard: the bearer token out of the headers, through the verifier, against the required
//! scopes.

use std::{fmt, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, Method, Response, Uri};
use http_body_util::Full;

use crate::{
    cache::DEFAULT_CACHE_TTL,
    cache::DEFAULT_CACHED_TOKENS,
    cache::TokenCache,
    challenge::{Challenges, Context, Scheme, challenge},
    error::ConfigError,
    error::Refusal,
    error::RefusalKind,
    layer::RequireBearerLayer,
    metadata::MetadataService,
    metadata::ResourceMetadata,
    metadata::{self, WELL_KNOWN_PREFIX, parse_resource, split_http_url, well_known_path},
    principal::Principal,
    verifier::TokenVerifier,
};
pub use credentials::MAX_TOKEN_BYTES;
use credentials::{Accepted, credentials};

mod credentials;
#[cfg(feature = "dpop")]
mod dpop;

/// The resource server's side of MCP authorization: checks the bearer token of a request and
/// knows the protected resource metadata that tells clients where to get one.
///
/// Cloning is cheap (the configuration is shared). Everything a refusal says is computed when
/// the guard is built, so refusing a flood of bad requests costs little.
///
/// ```
/// # async fn f() {
/// use http::HeaderMap;
/// use mcp_streamable_auth::{Guard, Principal, RefusalKind, TokenError, TokenErrorKind, TokenVerifier, VerifyFuture};
///
/// struct Fixed;
/// impl TokenVerifier for Fixed {
///     fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
///         Box::pin(async move {
///             match token {
///                 "reader" => Ok(Principal::new("alice").with_scopes(["mcp:read"])),
///                 _ => Err(TokenError::new(TokenErrorKind::Invalid)),
///             }
///         })
///     }
/// }
///
/// let guard = Guard::builder("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scopes_supported(["mcp:read", "mcp:write"])
///     .required_scopes(["mcp:read"])
///     .build(Fixed)
///     .unwrap();
///
/// let mut headers = HeaderMap::new();
/// headers.insert("authorization", "Bearer reader".parse().unwrap());
/// assert_eq!(guard.check(&headers).await.unwrap().subject, "alice");
///
/// headers.insert("authorization", "Bearer stolen".parse().unwrap());
/// assert_eq!(guard.check(&headers).await.unwrap_err().kind(), RefusalKind::InvalidToken);
/// # }
/// ```
#[derive(Clone)]
pub struct Guard {
    inner: Arc<Inner>,
}

struct Inner {
    metadata: ResourceMetadata,
    document: Bytes,
    metadata_url: String,
    metadata_paths: Vec<String>,
    required_scopes: Vec<String>,
    challenges: Challenges,
    verifier: Arc<dyn TokenVerifier>,
    cache: TokenCache,
    #[cfg(feature = "dpop")]
    dpop: Option<crate::dpop::Checker>,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("resource", &self.inner.metadata.resource)
            .field("metadata_url", &self.inner.metadata_url)
            .field("required_scopes", &self.inner.required_scopes)
            .field("accepted", &self.accepted())
            .finish_non_exhaustive()
    }
}

/// Settings for a [`Guard`], from [`Guard::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct GuardBuilder {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    required_scopes: Vec<String>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    root_metadata: bool,
    cached_tokens: usize,
    cache_ttl: Duration,
    #[cfg(feature = "dpop")]
    dpop: Option<crate::dpop::Config>,
}

impl GuardBuilder {
    /// Accepts DPoP-bound tokens with their proofs (RFC 9449), as `config` says: beside bearer
    /// tokens by default, or instead of them ([`required`](crate::dpop::Config::required)).
    /// Off unless given. Feature `dpop`.
    ///
    /// ```
    /// # use mcp_streamable_auth::{Guard, Principal, VerifyFuture};
    /// # struct V;
    /// # impl mcp_streamable_auth::TokenVerifier for V {
    /// #     fn verify<'a>(&'a self, _: &'a str) -> VerifyFuture<'a> { Box::pin(async { Ok(Principal::new("a")) }) }
    /// # }
    /// use mcp_streamable_auth::dpop;
    ///
    /// let guard = Guard::builder("https://mcp.example.com/mcp")
    ///     .authorization_server("https://auth.example.com")
    ///     .dpop(dpop::Config::default().algorithms([dpop::Algorithm::ES256]))
    ///     .build(V)?;
    /// # let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let refusal = runtime.block_on(guard.check(&http::HeaderMap::new())).unwrap_err();
    /// assert_eq!(
    ///     refusal.www_authenticate().unwrap(),
    ///     r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", DPoP algs="ES256", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "dpop")]
    #[cfg_attr(docsrs, doc(cfg(feature = "dpop")))]
    pub fn dpop(mut self, config: crate::dpop::Config) -> GuardBuilder {
        self.dpop = Some(config);
        self
    }

    /// How many accepted tokens the guard remembers, so that a token sent again is not
    /// verified again (0: verify every request). A remembered token is taken at its word until
    /// it expires or [`cache_ttl`](Self::cache_ttl) runs out. Default:
    /// [`DEFAULT_CACHED_TOKENS`].
    pub fn cached_tokens(mut self, max: usize) -> Self {
        self.cached_tokens = max;
        self
    }

    /// How long a remembered token is taken at its word at most: a token revoked where the
    /// verifier could tell keeps working this long. Default: [`DEFAULT_CACHE_TTL`].
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// Adds an authorization server, by its issuer URL (at least one is required). It is
    /// published as given.
    pub fn authorization_server(mut self, url: impl Into<String>) -> GuardBuilder {
        self.authorization_servers.push(url.into());
        self
    }

    /// The scopes published in the metadata for clients to ask for. By default, the required
    /// scopes.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> GuardBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The scopes every token must carry; a valid token without one of them gets a 403 naming
    /// them all. None by default.
    pub fn required_scopes<I, S>(mut self, scopes: I) -> GuardBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A name for people, published as `resource_name`.
    pub fn resource_name(mut self, name: impl Into<String>) -> GuardBuilder {
        self.resource_name = Some(name.into());
        self
    }

    /// A documentation URL, published as `resource_documentation`.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> GuardBuilder {
        self.resource_documentation = Some(url.into());
        self
    }

    /// Whether to serve the metadata at the root well-known path too
    /// (`/.well-known/oauth-protected-resource`), where clients that ignore the challenge's URL
    /// look last. On by default; turn it off when one host serves several resources.
    pub fn root_metadata(mut self, serve: bool) -> GuardBuilder {
        self.root_metadata = serve;
        self
    }

    /// Checks the settings and builds the guard around `verifier`.
    pub fn build(self, verifier: impl TokenVerifier + 'static) -> Result<Guard, ConfigError> {
        let resource = parse_resource(&self.resource)?;
        if self.authorization_servers.is_empty() {
            return Err(ConfigError::NoAuthorizationServer);
        }
        for url in &self.authorization_servers {
            if split_http_url(url).is_none() || url.contains('#') {
                return Err(ConfigError::InvalidAuthorizationServer { url: url.clone() });
            }
        }
        let scopes_supported = self
            .scopes_supported
            .unwrap_or_else(|| self.required_scopes.clone());
        for scope in scopes_supported.iter().chain(&self.required_scopes) {
            if !is_scope_token(scope) {
                return Err(ConfigError::InvalidScope {
                    scope: scope.clone(),
                });
            }
        }
        if let Some(scope) = self
            .required_scopes
            .iter()
            .find(|scope| !scopes_supported.contains(scope))
        {
            return Err(ConfigError::RequiredScopeNotSupported {
                scope: scope.clone(),
            });
        }

        let path_aware = well_known_path(resource.path);
        let metadata_url = format!("{}{path_aware}", resource.origin);
        let mut metadata_paths = vec![path_aware];
        if self.root_metadata && metadata_paths[0] != WELL_KNOWN_PREFIX {
            metadata_paths.push(WELL_KNOWN_PREFIX.to_owned());
        }
        #[cfg(feature = "dpop")]
        let dpop = match self.dpop {
            Some(config) => Some(crate::dpop::Checker::new(config, resource.origin)?),
            None => None,
        };
        let scope = self.required_scopes.join(" ");
        #[cfg(feature = "dpop")]
        let (bearer, algs) = match &dpop {
            Some(dpop) => (dpop.accepts_bearer(), Some(dpop.algs())),
            None => (true, None),
        };
        #[cfg(not(feature = "dpop"))]
        let (bearer, algs) = (true, None);
        let challenges = Challenges::new(Context {
            metadata_url: &metadata_url,
            scope: &scope,
            bearer,
            algs,
        })?;

        let metadata = ResourceMetadata {
            resource: self.resource.clone(),
            authorization_servers: self.authorization_servers,
            scopes_supported,
            bearer_methods_supported: vec!["header".to_owned()],
            resource_name: self.resource_name,
            resource_documentation: self.resource_documentation,
        };
        let document = Bytes::from(serde_json::to_vec(&metadata).unwrap_or_default());
        Ok(Guard {
            inner: Arc::new(Inner {
                metadata,
                document,
                metadata_url,
                metadata_paths,
                required_scopes: self.required_scopes,
                challenges,
                verifier: Arc::new(verifier),
                cache: TokenCache::new(self.cached_tokens, self.cache_ttl),
                #[cfg(feature = "dpop")]
                dpop,
            }),
        })
    }
}

impl Guard {
    /// Starts the settings of a guard for `resource`: the URL of the MCP endpoint exactly as
    /// clients use it (`https://mcp.example.com/mcp`). It is published and compared as given,
    /// never normalized.
    pub fn builder(resource: impl Into<String>) -> GuardBuilder {
        GuardBuilder {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: None,
            required_scopes: Vec::new(),
            resource_name: None,
            resource_documentation: None,
            root_metadata: true,
            cached_tokens: DEFAULT_CACHED_TOKENS,
            cache_ttl: DEFAULT_CACHE_TTL,
            #[cfg(feature = "dpop")]
            dpop: None,
        }
    }

    /// Checks the request's bearer token: present once, well formed, accepted by the verifier,
    /// with every required scope.
    ///
    /// This sees the headers alone, so it cannot check a DPoP proof (which names the request's
    /// method and URL): `Authorization: DPoP` is refused here with `invalid_dpop_proof`. A guard
    /// configured for DPoP is called through [`check_request`](Guard::check_request), as
    /// [`RequireBearer`](crate::RequireBearer) does.
    pub async fn check(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        self.check_with(None, headers).await
    }

    /// Checks the request's credentials: a bearer token as [`check`](Guard::check) does or,
    /// with DPoP configured ([`GuardBuilder::dpop`]), a DPoP-bound token and its proof for
    /// `method` and `uri` (of which only the path is read: see
    /// [`dpop::Config::public_origin`](crate::dpop::Config::public_origin)).
    pub async fn check_request(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<Principal, Refusal> {
        self.check_with(Some((method, uri)), headers).await
    }

    async fn check_with(
        &self,
        target: Option<(&Method, &Uri)>,
        headers: &HeaderMap,
    ) -> Result<Principal, Refusal> {
        let (scheme, token) = credentials(headers, self.accepted()).map_err(|(scheme, kind)| {
            tracing::debug!(reason = ?kind, "request refused");
            self.refusal(kind, scheme)
        })?;
        #[cfg(feature = "dpop")]
        let proof = match scheme {
            Scheme::Dpop => Some(self.proof(target, headers, token)?),
            Scheme::Bearer => None,
        };
        #[cfg(not(feature = "dpop"))]
        let _ = target;
        let principal = self.principal(token, scheme).await?;
        match scheme {
            Scheme::Bearer if principal.jkt.is_some() => {
                tracing::debug!(subject = %principal.subject, "dpop-bound token sent as bearer");
                return Err(self.refusal(RefusalKind::TokenBinding, scheme));
            }
            Scheme::Bearer => {}
            #[cfg(feature = "dpop")]
            Scheme::Dpop => {
                if let Some(proof) = proof {
                    self.bind(&principal, proof).await?;
                }
            }
            #[cfg(not(feature = "dpop"))]
            Scheme::Dpop => {}
        }
        let required = &self.inner.required_scopes;
        if let Some(missing) = required.iter().find(|scope| !principal.has_scope(scope)) {
            tracing::debug!(subject = %principal.subject, missing = %missing, "token lacks a scope");
            return Err(self.refusal(RefusalKind::InsufficientScope, scheme));
        }
        Ok(principal)
    }

    /// The principal of `token`: remembered, or from the verifier.
    async fn principal(&self, token: &str, scheme: Scheme) -> Result<Principal, Refusal> {
        if let Some(principal) = self.inner.cache.get(token) {
            return Ok(principal);
        }
        match self.inner.verifier.verify(token).await {
            Ok(principal) => {
                self.inner.cache.put(token, &principal);
                Ok(principal)
            }
            Err(error) => {
                let kind = RefusalKind::of_token_error(error.kind());
                if kind == RefusalKind::Unavailable {
                    tracing::warn!(error = %error, source = ?std::error::Error::source(&error), "token verifier unavailable");
                } else {
                    tracing::debug!(reason = ?kind, source = ?std::error::Error::source(&error), "token refused");
                }
                Err(self.refusal(kind, scheme).with_source(error))
            }
        }
    }

    /// The schemes this guard takes.
    fn accepted(&self) -> Accepted {
        #[cfg(feature = "dpop")]
        if let Some(dpop) = &self.inner.dpop {
            return Accepted {
                bearer: dpop.accepts_bearer(),
                dpop: true,
            };
        }
        Accepted {
            bearer: true,
            dpop: false,
        }
    }

    /// The challenges' context, naming `scope`.
    fn context<'a>(&'a self, scope: &'a str) -> Context<'a> {
        let accepted = self.accepted();
        Context {
            metadata_url: &self.inner.metadata_url,
            scope,
            bearer: accepted.bearer,
            #[cfg(feature = "dpop")]
            algs: self.inner.dpop.as_ref().map(|dpop| dpop.algs()),
            #[cfg(not(feature = "dpop"))]
            algs: None,
        }
    }

    /// A 403 `insufficient_scope` refusal whose challenge names `scopes`: for an operation that
    /// needs more than the guard's required scopes (a tool that needs `mcp:admin`), so that the
    /// client can ask for them (step-up authorization). Scopes with characters RFC 6749 does
    /// not allow are left out.
    ///
    /// ```
    /// # use mcp_streamable_auth::{Guard, Principal, VerifyFuture};
    /// # struct V;
    /// # impl mcp_streamable_auth::TokenVerifier for V {
    /// #     fn verify<'a>(&'a self, _: &'a str) -> VerifyFuture<'a> { Box::pin(async { Ok(Principal::new("a")) }) }
    /// # }
    /// let guard = Guard::builder("https://mcp.example.com/mcp")
    ///     .authorization_server("https://auth.example.com")
    ///     .build(V)?;
    /// let response = guard.insufficient_scope(["mcp", "mcp:admin"]).to_response();
    /// assert_eq!(response.status(), 403);
    /// assert!(response.headers()["www-authenticate"].to_str()?.contains(r#"scope="mcp mcp:admin""#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insufficient_scope<I, S>(&self, scopes: I) -> Refusal
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut scope = String::new();
        for item in scopes {
            let item = item.as_ref();
            if is_scope_token(item) {
                if !scope.is_empty() {
                    scope.push(' ');
                }
                scope.push_str(item);
            }
        }
        let kind = RefusalKind::InsufficientScope;
        // The scheme the guard expects; a guard that takes both says it for bearer clients.
        let scheme = if self.accepted().bearer {
            Scheme::Bearer
        } else {
            Scheme::Dpop
        };
        match challenge(kind, scheme, self.context(&scope)) {
            Some(value) => Refusal::new(kind, Some(value)),
            None => self.refusal(kind, scheme),
        }
    }

    fn refusal(&self, kind: RefusalKind, scheme: Scheme) -> Refusal {
        Refusal::new(kind, self.inner.challenges.get(kind, scheme))
    }

    /// The resource URL, as configured.
    pub fn resource(&self) -> &str {
        &self.inner.metadata.resource
    }

    /// The metadata document.
    pub fn metadata(&self) -> &ResourceMetadata {
        &self.inner.metadata
    }

    /// The path-aware URL of the metadata, the one challenges point to:
    /// `https://mcp.example.com/.well-known/oauth-protected-resource/mcp` for
    /// `https://mcp.example.com/mcp`.
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The paths the metadata is served at: the path-aware one, then the root one unless turned
    /// off ([`GuardBuilder::root_metadata`]) or the same.
    pub fn metadata_paths(&self) -> &[String] {
        &self.inner.metadata_paths
    }

    /// The answer to a request for `path` with `method` when `path` is one of
    /// [`metadata_paths`](Guard::metadata_paths): the document to GET, headers to HEAD, a CORS
    /// preflight answer to OPTIONS, 405 otherwise. `None` for any other path.
    ///
    /// ```
    /// # use mcp_streamable_auth::{Guard, Principal, VerifyFuture};
    /// # struct V;
    /// # impl mcp_streamable_auth::TokenVerifier for V {
    /// #     fn verify<'a>(&'a self, _: &'a str) -> VerifyFuture<'a> { Box::pin(async { Ok(Principal::new("a")) }) }
    /// # }
    /// let guard = Guard::builder("https://mcp.example.com/mcp")
    ///     .authorization_server("https://auth.example.com")
    ///     .build(V)?;
    /// let path = "/.well-known/oauth-protected-resource/mcp";
    /// let response = guard.metadata_response(&http::Method::GET, path).unwrap();
    /// assert_eq!(response.status(), 200);
    /// assert!(guard.metadata_response(&http::Method::GET, "/mcp").is_none());
    /// # Ok::<(), mcp_streamable_auth::ConfigError>(())
    /// ```
    pub fn metadata_response(&self, method: &Method, path: &str) -> Option<Response<Full<Bytes>>> {
        self.inner
            .metadata_paths
            .iter()
            .any(|served| served == path)
            .then(|| metadata::answer(&self.inner.document, method))
    }

    /// A tower service that serves the metadata document, to mount at
    /// [`metadata_paths`](Guard::metadata_paths) in a router.
    pub fn metadata_service(&self) -> MetadataService {
        MetadataService::new(self.inner.document.clone())
    }

    /// The tower layer that guards a service with this guard.
    pub fn layer(&self) -> RequireBearerLayer {
        RequireBearerLayer::new(self.clone())
    }
}

/// RFC 6749 §3.3: `1*( %x21 / %x23-5B / %x5D-7E )`.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests;
