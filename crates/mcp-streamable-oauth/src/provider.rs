//! [`OAuth`]: the [`AuthProvider`] that runs the whole dance: asked before each request, it
//! sends the token it holds (refreshed when about to expire); told of a 401, it discovers the
//! authorization server and refreshes or grants anew; told of a 403 `insufficient_scope`, it
//! steps up, a bounded number of times.

use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use http::HeaderValue;
use mcp_http_client::HttpClient;
use mcp_streamable_client::{AuthContext, AuthFuture, AuthProvider, BoxError, ProofContext};
use tokio::sync::Mutex;
use url::Url;

use crate::challenge::Challenge;
use crate::discovery::{self, Discovered, canonical};
use crate::dpop::DpopKey;
use crate::error::{Error, ErrorKind};
use crate::federation::{Assertion, IdentityProvider};
use crate::grant::Grant;
use crate::http::Http;
use crate::interaction::Interaction;
use crate::registration::{ClientIdentity, PrivateKeyJwt, Registration};
use crate::scope;
use crate::store::{MemoryStore, TokenStore};
use crate::token::{Tokens, refusal};

/// How long before its expiry a token is refreshed: a request sent with it must still arrive
/// in time.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How many times the provider asks for more scope before it gives up: the MCP spec asks for
/// a limit, and the conformance suite allows three authorizations in all.
pub const DEFAULT_MAX_STEP_UPS: u32 = 2;
/// How long one request to the authorization server may take.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The grant the provider uses.
#[derive(Clone)]
enum Flow {
    AuthorizationCode(Arc<dyn Interaction>),
    ClientCredentials,
    /// Workload identity federation: the JWT-bearer grant with the workload's JWT.
    JwtBearer(Arc<dyn Assertion>),
    /// Enterprise-managed authorization: an ID-JAG, then the JWT-bearer grant with it.
    EnterpriseManaged(IdentityProvider),
}

impl Flow {
    /// Whether the grant runs without a user, so is simply made again when a token without
    /// a refresh token expires; such a client must be registered beforehand.
    fn unattended(&self) -> bool {
        !matches!(self, Flow::AuthorizationCode(_))
    }

    fn name(&self) -> &'static str {
        match self {
            Flow::AuthorizationCode(_) => "authorization_code",
            Flow::ClientCredentials => "client_credentials",
            Flow::JwtBearer(_) => "jwt_bearer",
            Flow::EnterpriseManaged(_) => "enterprise_managed",
        }
    }

    /// The grant types a registration of the client names.
    fn grant_types(&self) -> Vec<&'static str> {
        match self {
            Flow::AuthorizationCode(_) => vec!["authorization_code", "refresh_token"],
            Flow::ClientCredentials => vec!["client_credentials"],
            Flow::JwtBearer(_) | Flow::EnterpriseManaged(_) => {
                vec!["urn:ietf:params:oauth:grant-type:jwt-bearer"]
            }
        }
    }
}

/// An OAuth 2.1 client for one MCP server, to hand to
/// [`ClientBuilder::auth`](mcp_streamable_client::ClientBuilder::auth).
///
/// It authorizes one request at a time: requests refused while an authorization runs (the user
/// may take minutes in the browser) wait for it, then use its token. Clones share the state.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_streamable_client::Client;
/// use mcp_streamable_oauth::{LoopbackRedirect, OAuth};
///
/// let url = "https://mcp.example.com/mcp";
/// let browser = LoopbackRedirect::bind(|url| eprintln!("Open {url} to sign in")).await?;
/// let oauth = OAuth::builder(url)
///     .authorization_code(browser)
///     .client_name("my-agent")
///     .build()?;
/// // Connect as usual (`Transport::connect`): the first 401 starts the authorization.
/// let client = Client::builder(url).auth(oauth).build()?;
/// # drop(client);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    server: Url,
    /// The store key: the server's canonical URL.
    key: String,
    flow: Flow,
    identity: ClientIdentity,
    key_pair: Option<PrivateKeyJwt>,
    /// The key new tokens are bound to with DPoP, if the user asked for DPoP.
    dpop: Option<DpopKey>,
    /// The key the tokens held now are bound to: the proofs are signed outside the state's
    /// lock, which an authorization may hold for minutes.
    bound: RwLock<Option<DpopKey>>,
    store: Arc<dyn TokenStore>,
    http: Http,
    refresh_margin: Duration,
    max_step_ups: u32,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    loaded: bool,
    tokens: Option<Tokens>,
    discovered: Option<Discovered>,
    /// Every scope asked for so far: a step-up asks for them all again.
    requested: Vec<String>,
    step_ups: u32,
}

impl OAuth {
    /// Starts a provider for the MCP server at `server_url`.
    pub fn builder(server_url: &str) -> OAuthBuilder {
        OAuthBuilder {
            server: server_url.to_owned(),
            flow: None,
            identity: ClientIdentity {
                name: "mcp-streamable-oauth".into(),
                ..ClientIdentity::default()
            },
            key_pair: None,
            dpop: None,
            store: None,
            refresh_margin: DEFAULT_REFRESH_MARGIN,
            max_step_ups: DEFAULT_MAX_STEP_UPS,
            http_timeout: DEFAULT_HTTP_TIMEOUT,
            http_client: None,
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }

    /// The tokens held now, if any (from the store when none were used yet).
    pub async fn tokens(&self) -> Result<Option<Tokens>, Error> {
        let mut state = self.inner.state.lock().await;
        self.inner.load(&mut state).await?;
        Ok(state.tokens.clone())
    }
}

impl Inner {
    async fn authorization(&self, context: AuthContext) -> Result<Option<HeaderValue>, Error> {
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        if !context.is_retry() {
            return self.current(&mut state).await;
        }
        if let Some(tokens) = &state.tokens {
            // Another request has replaced the refused token already.
            if Some(tokens.header()?) != context.refused {
                return tokens.header().map(Some);
            }
        }
        let challenge = context
            .challenge
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(Challenge::parse)
            .unwrap_or_default();
        if challenge.is_insufficient_scope() {
            self.step_up(&mut state, &challenge).await
        } else {
            self.unauthorized(&mut state, &challenge).await
        }
    }

    async fn load(&self, state: &mut State) -> Result<(), Error> {
        if !state.loaded {
            let tokens = self.store.tokens(&self.key).await.map_err(store)?;
            self.hold(state, tokens);
            state.loaded = true;
        }
        Ok(())
    }

    /// Makes `tokens` the ones held, and their key the one proofs are signed with.
    fn hold(&self, state: &mut State, tokens: Option<Tokens>) {
        let key = tokens.as_ref().and_then(|t| t.dpop_key.clone());
        *self.bound.write().unwrap_or_else(|e| e.into_inner()) = key;
        state.tokens = tokens;
    }

    /// The DPoP proof of one request, for a request carrying a DPoP token (RFC 9449,
    /// section 7): its `ath` hashes the token the request carries.
    fn proof(&self, context: &ProofContext<'_>) -> Result<Option<HeaderValue>, Error> {
        let token = context
            .authorization
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("DPoP "));
        let bound = self.bound.read().unwrap_or_else(|e| e.into_inner());
        let (Some(token), Some(key)) = (token, bound.as_ref()) else {
            return Ok(None);
        };
        let nonce = context.nonce.and_then(|v| v.to_str().ok());
        let uri = context.uri.to_string();
        let proof = key.proof(context.method.as_str(), &uri, Some(token), nonce)?;
        let mut value = HeaderValue::from_str(proof.expose())
            .map_err(|e| Error::new(ErrorKind::Config).with(e))?;
        value.set_sensitive(true);
        Ok(Some(value))
    }

    /// The token for a first try: the one held, refreshed if it is about to expire.
    async fn current(&self, state: &mut State) -> Result<Option<HeaderValue>, Error> {
        let Some(tokens) = state.tokens.clone() else {
            // Nothing yet: the server's 401 will say where to get a token.
            return Ok(None);
        };
        let renewable = tokens.refresh_token.is_some() || self.flow.unattended();
        if let Some(discovered) = state.discovered.clone()
            && renewable
            && tokens.expires_within(self.refresh_margin)
        {
            tracing::debug!("token about to expire; renewing it");
            match self.renew(state, &discovered, &tokens).await {
                Ok(fresh) => return fresh.header().map(Some),
                // The token may still be good for a while; a 401 will say when it is not.
                Err(e) => tracing::debug!(error = %e, "could not renew the token before expiry"),
            }
        }
        state.tokens.as_ref().map(Tokens::header).transpose()
    }

    /// A refresh where there is a refresh token, a new grant of an unattended flow otherwise.
    async fn renew(
        &self,
        state: &mut State,
        discovered: &Discovered,
        tokens: &Tokens,
    ) -> Result<Tokens, Error> {
        let registration = self.registration(discovered).await?;
        let grant = Grant {
            http: &self.http,
            discovered,
            registration: &registration,
            key: self.key_pair.as_ref(),
            scope: tokens.scope.as_deref(),
            // A refresh token bound to a key is refreshed with that key (RFC 9449, section 5).
            dpop: tokens.dpop_key.as_ref().or(self.dpop.as_ref()),
        };
        let fresh = match &tokens.refresh_token {
            Some(_) => grant.refresh(tokens).await,
            None if self.flow.unattended() => self.run(&grant).await,
            None => Err(Error::new(ErrorKind::Token).detail("no refresh token")),
        };
        self.keep(state, fresh?).await
    }

    /// After a 401: discovery again (the resource may have moved to another authorization
    /// server), then a refresh if the token came from the same one, else a new grant.
    async fn unauthorized(
        &self,
        state: &mut State,
        challenge: &Challenge,
    ) -> Result<Option<HeaderValue>, Error> {
        let discovered = discovery::discover(&self.http, &self.server, challenge).await?;
        state.discovered = Some(discovered.clone());
        if let Some(tokens) = state.tokens.clone() {
            if tokens.issuer == discovered.server.issuer && tokens.refresh_token.is_some() {
                match self.renew(state, &discovered, &tokens).await {
                    Ok(fresh) => return fresh.header().map(Some),
                    Err(e) => {
                        tracing::debug!(error = %e, "refresh refused; authorizing anew");
                        self.forget_tokens(state).await?;
                    }
                }
            } else {
                self.forget_tokens(state).await?;
            }
        }
        let wanted = scope::select(
            challenge.scope.as_deref(),
            discovered.resource_scopes.as_deref(),
            &state.requested,
            self.offline_access(&discovered),
        );
        let tokens = self.grant(state, &discovered, wanted.as_deref()).await?;
        tokens.header().map(Some)
    }

    /// After a 403 `insufficient_scope`: a new grant with the scopes held and the ones asked.
    async fn step_up(
        &self,
        state: &mut State,
        challenge: &Challenge,
    ) -> Result<Option<HeaderValue>, Error> {
        // The scopes granted (as the token answer said, else as asked).
        let held: Vec<String> = state
            .tokens
            .iter()
            .flat_map(|t| t.scopes().map(str::to_owned))
            .collect();
        let challenged = challenge.scope.as_deref().unwrap_or("");
        if scope::covered(challenged, &held) || state.step_ups >= self.max_step_ups {
            // The token has the scope asked for (or the limit is reached): another grant
            // would change nothing.
            return Err(Error::new(ErrorKind::StepUpLimit).detail(challenged.to_owned()));
        }
        let mut previously = state.requested.clone();
        previously.extend(
            held.iter()
                .filter(|s| !state.requested.contains(s))
                .cloned(),
        );
        state.step_ups += 1;
        let discovered = match state.discovered.clone() {
            Some(discovered) => discovered,
            None => discovery::discover(&self.http, &self.server, challenge).await?,
        };
        state.discovered = Some(discovered.clone());
        let wanted = scope::select(
            challenge.scope.as_deref(),
            discovered.resource_scopes.as_deref(),
            &previously,
            self.offline_access(&discovered),
        );
        tracing::debug!(scope = ?wanted, "stepping up");
        let tokens = self.grant(state, &discovered, wanted.as_deref()).await?;
        tokens.header().map(Some)
    }

    fn offline_access(&self, discovered: &Discovered) -> bool {
        matches!(self.flow, Flow::AuthorizationCode(_))
            && discovered.server.supports_scope("offline_access")
    }

    /// A new grant; a dynamic registration the server has forgotten is made again, once.
    async fn grant(
        &self,
        state: &mut State,
        discovered: &Discovered,
        wanted: Option<&str>,
    ) -> Result<Tokens, Error> {
        if let Some(wanted) = wanted {
            for scope in wanted.split_whitespace() {
                if !state.requested.iter().any(|s| s == scope) {
                    state.requested.push(scope.to_owned());
                }
            }
        }
        let registration = self.registration(discovered).await?;
        let tokens = match self.grant_with(discovered, &registration, wanted).await {
            Err(e) if refusal(&e) == Some("invalid_client") && registration.dynamic => {
                tracing::debug!("the server forgot the client; registering again");
                let issuer = discovered.server.issuer.as_str();
                self.store
                    .set_registration(issuer, None)
                    .await
                    .map_err(store)?;
                let registration = self.registration(discovered).await?;
                self.grant_with(discovered, &registration, wanted).await?
            }
            other => other?,
        };
        self.keep(state, tokens).await
    }

    async fn grant_with(
        &self,
        discovered: &Discovered,
        registration: &Registration,
        wanted: Option<&str>,
    ) -> Result<Tokens, Error> {
        let grant = Grant {
            http: &self.http,
            discovered,
            registration,
            key: self.key_pair.as_ref(),
            scope: wanted,
            dpop: self.dpop.as_ref(),
        };
        self.run(&grant).await
    }

    /// The flow's grant.
    async fn run(&self, grant: &Grant<'_>) -> Result<Tokens, Error> {
        match &self.flow {
            Flow::AuthorizationCode(interaction) => {
                grant.authorization_code(interaction.as_ref()).await
            }
            Flow::ClientCredentials => grant.client_credentials().await,
            Flow::JwtBearer(assertion) => grant.jwt_bearer(assertion.as_ref()).await,
            Flow::EnterpriseManaged(idp) => grant.enterprise_managed(idp).await,
        }
    }

    /// The client's registration at the discovered server: pre-registered, a metadata
    /// document, or one registered (and stored) before, in that order; else a new one.
    async fn registration(&self, discovered: &Discovered) -> Result<Registration, Error> {
        let server = &discovered.server;
        if let Some(registration) = self.identity.preregistered_for(&server.issuer) {
            return Ok(registration);
        }
        if self.flow.unattended() {
            return Err(Error::new(ErrorKind::Registration).detail("no client credentials"));
        }
        if let Some(registration) = self.identity.metadata_document(server) {
            return Ok(registration);
        }
        let redirect_uri = match &self.flow {
            Flow::AuthorizationCode(interaction) => Some(interaction.redirect_uri()),
            _ => None,
        };
        let stored = self
            .store
            .registration(&server.issuer)
            .await
            .map_err(store)?;
        if let Some(registration) = stored {
            let fits =
                redirect_uri.is_none_or(|uri| registration.redirect_uris.iter().any(|r| r == uri));
            if fits {
                return Ok(registration);
            }
        }
        let registration = self
            .identity
            .register(&self.http, server, redirect_uri)
            .await?;
        self.store
            .set_registration(&server.issuer, Some(registration.clone()))
            .await
            .map_err(store)?;
        Ok(registration)
    }

    async fn keep(&self, state: &mut State, tokens: Tokens) -> Result<Tokens, Error> {
        self.store
            .set_tokens(&self.key, Some(tokens.clone()))
            .await
            .map_err(store)?;
        self.hold(state, Some(tokens.clone()));
        Ok(tokens)
    }

    async fn forget_tokens(&self, state: &mut State) -> Result<(), Error> {
        self.hold(state, None);
        self.store.set_tokens(&self.key, None).await.map_err(store)
    }
}

fn store(e: crate::error::BoxError) -> Error {
    Error::new(ErrorKind::Store).with(e)
}

impl AuthProvider for OAuth {
    fn authorization(&self, context: AuthContext) -> AuthFuture {
        let inner = self.inner.clone();
        Box::pin(async move {
            inner
                .authorization(context)
                .await
                .map_err(|e| Box::new(e) as _)
        })
    }

    fn proof(&self, context: &ProofContext<'_>) -> Result<Option<HeaderValue>, BoxError> {
        Ok(self.inner.proof(context)?)
    }
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("server", &self.inner.server.as_str())
            .field("flow", &self.inner.flow.name())
            .field("dpop", &self.inner.dpop)
            .finish_non_exhaustive()
    }
}

/// Configures an [`OAuth`] provider: the grant, the client's identity, the store.
#[must_use]
pub struct OAuthBuilder {
    server: String,
    flow: Option<Flow>,
    identity: ClientIdentity,
    key_pair: Option<PrivateKeyJwt>,
    dpop: Option<DpopKey>,
    store: Option<Arc<dyn TokenStore>>,
    refresh_margin: Duration,
    max_step_ups: u32,
    http_timeout: Duration,
    http_client: Option<Arc<dyn HttpClient>>,
    #[cfg(feature = "rustls")]
    tls: Option<rustls::ClientConfig>,
}

impl OAuthBuilder {
    /// Uses the authorization-code grant with PKCE, the user approving through
    /// `interaction` (a [`LoopbackRedirect`](crate::LoopbackRedirect) for command-line
    /// programs).
    pub fn authorization_code(mut self, interaction: impl Interaction) -> Self {
        self.flow = Some(Flow::AuthorizationCode(Arc::new(interaction)));
        self
    }

    /// Uses the client-credentials grant, for a machine acting for itself; needs
    /// [`preregistered`](Self::preregistered) credentials (and a [`private_key`](Self::private_key)
    /// for `private_key_jwt`).
    pub fn client_credentials(mut self) -> Self {
        self.flow = Some(Flow::ClientCredentials);
        self
    }

    /// Uses the JWT-bearer grant (RFC 7523) with the JWT of a workload's platform (workload
    /// identity federation: a Kubernetes service account token, a cloud's identity token),
    /// asked of `assertion` for each grant; needs [`preregistered`](Self::preregistered)
    /// credentials (a public client's id will do). A refused grant is not tried again.
    ///
    /// ```no_run
    /// use mcp_streamable_oauth::{OAuth, Registration, Secret};
    ///
    /// let jwt = std::env::var("WORKLOAD_JWT").unwrap_or_default();
    /// let oauth = OAuth::builder("https://mcp.example.com/mcp")
    ///     .preregistered(Registration::new("my-workload"), None)
    ///     .workload_identity(Secret::new(jwt))
    ///     .build()?;
    /// # drop(oauth);
    /// # Ok::<(), mcp_streamable_oauth::Error>(())
    /// ```
    pub fn workload_identity(mut self, assertion: impl Assertion) -> Self {
        self.flow = Some(Flow::JwtBearer(Arc::new(assertion)));
        self
    }

    /// Uses enterprise-managed authorization (SEP-990): the user's ID token is exchanged at
    /// the enterprise's identity provider `idp` for an ID-JAG naming the authorization server
    /// and the resource (RFC 8693), and that for tokens with the JWT-bearer grant (RFC 7523);
    /// no browser. Needs [`preregistered`](Self::preregistered) credentials at the MCP
    /// server's authorization server.
    ///
    /// ```no_run
    /// use mcp_streamable_oauth::{IdentityProvider, OAuth, Registration, Secret};
    ///
    /// let id_token = Secret::new("eyJ...the user's ID token from the sign-on");
    /// let idp = IdentityProvider::new(
    ///     "https://idp.example.com/oauth2/token",
    ///     Registration::new("my-agent-at-the-idp"),
    ///     id_token,
    /// );
    /// let oauth = OAuth::builder("https://mcp.example.com/mcp")
    ///     .preregistered(Registration::with_secret("my-agent", "its-secret"), None)
    ///     .enterprise_managed(idp)
    ///     .build()?;
    /// # drop(oauth);
    /// # Ok::<(), mcp_streamable_oauth::Error>(())
    /// ```
    pub fn enterprise_managed(mut self, idp: IdentityProvider) -> Self {
        self.flow = Some(Flow::EnterpriseManaged(idp));
        self
    }

    /// A client registered beforehand, for the authorization server `issuer` (or any, with
    /// `None`). Used before a metadata document or a dynamic registration.
    pub fn preregistered(mut self, registration: Registration, issuer: Option<&str>) -> Self {
        self.identity.preregistered = Some((registration, issuer.map(str::to_owned)));
        self
    }

    /// The URL of the client's metadata document: its `client_id` at servers that take one
    /// (`client_id_metadata_document_supported`), instead of registering.
    pub fn client_metadata_url(mut self, url: &str) -> Self {
        self.identity.metadata_url = Some(url.to_owned());
        self
    }

    /// The `client_name` a dynamic registration gives.
    pub fn client_name(mut self, name: &str) -> Self {
        self.identity.name = name.to_owned();
        self
    }

    /// The key the client signs its assertions with (`private_key_jwt`).
    pub fn private_key(mut self, key: PrivateKeyJwt) -> Self {
        self.key_pair = Some(key);
        self
    }

    /// Binds the tokens to `key` with DPoP (RFC 9449): every token request carries a proof
    /// signed with it, a `DPoP` token is sent as `Authorization: DPoP` with a fresh proof per
    /// request, and a server's `use_dpop_nonce` is answered with its nonce. A server that
    /// answers with a bearer token gets it used as one. The key is kept with the tokens in the
    /// [`TokenStore`]; a stored token is used (and refreshed) with its own key.
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_streamable_oauth::{DpopKey, LoopbackRedirect, OAuth};
    ///
    /// let browser = LoopbackRedirect::bind(|url| eprintln!("Open {url} to sign in")).await?;
    /// let oauth = OAuth::builder("https://mcp.example.com/mcp")
    ///     .authorization_code(browser)
    ///     .dpop(DpopKey::generate()?)
    ///     .build()?;
    /// # drop(oauth);
    /// # Ok(()) }
    /// ```
    pub fn dpop(mut self, key: DpopKey) -> Self {
        self.dpop = Some(key);
        self
    }

    /// Where tokens and registrations are kept ([`MemoryStore`] by default).
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// How long before expiry a token is renewed ([`DEFAULT_REFRESH_MARGIN`]).
    pub fn refresh_margin(mut self, margin: Duration) -> Self {
        self.refresh_margin = margin;
        self
    }

    /// How many step-ups (new grants after 403 `insufficient_scope`) the provider makes in its
    /// lifetime ([`DEFAULT_MAX_STEP_UPS`]); each must also ask for a scope the token lacks.
    pub fn max_step_ups(mut self, max: u32) -> Self {
        self.max_step_ups = max;
        self
    }

    /// How long one request to the authorization server may take ([`DEFAULT_HTTP_TIMEOUT`]).
    pub fn http_timeout(mut self, timeout: Duration) -> Self {
        self.http_timeout = timeout;
        self
    }

    /// Trusts this TLS configuration for `https` to the authorization server (its roots, a
    /// private CA's say) instead of the default (the platform's roots, or the webpki roots
    /// where the platform has none). ALPN is set by the provider. Unused when an
    /// [`http_client`](Self::http_client) is given.
    #[cfg(feature = "rustls")]
    pub fn tls_config(mut self, config: rustls::ClientConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Sends the provider's requests (metadata, registration, tokens) through `client` instead
    /// of `mcp-http-client`'s default one: the application's own (a proxy's, one it shares
    /// with a JWT verifier), or a fake in tests. Each request still takes at most the
    /// [`http_timeout`](Self::http_timeout), and an answer over 256 KiB is refused.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use mcp_http_client::HttpClient;
    /// use mcp_streamable_oauth::{OAuth, Registration};
    ///
    /// let shared: Arc<dyn HttpClient> = Arc::new(mcp_http_client::Client::builder().build()?);
    /// let oauth = OAuth::builder("https://mcp.example.com/mcp")
    ///     .client_credentials()
    ///     .preregistered(Registration::with_secret("machine", "s3cret"), None)
    ///     .http_client(shared.clone())
    ///     .build()?;
    /// # drop(oauth);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn http_client(mut self, client: impl HttpClient + 'static) -> Self {
        self.http_client = Some(Arc::new(client));
        self
    }

    /// The provider; fails on a bad server URL or when no grant was chosen.
    pub fn build(self) -> Result<OAuth, Error> {
        let server = Url::parse(&self.server).map_err(|e| Error::new(ErrorKind::Config).with(e))?;
        let flow = self
            .flow
            .ok_or_else(|| Error::new(ErrorKind::Config).detail("no grant chosen"))?;
        let mut identity = self.identity;
        identity.grant_types = flow.grant_types();
        let client = match self.http_client {
            Some(client) => client,
            None => Http::default_client(
                self.http_timeout,
                #[cfg(feature = "rustls")]
                self.tls,
            )?,
        };
        Ok(OAuth {
            inner: Arc::new(Inner {
                key: canonical(&server),
                server,
                flow,
                identity,
                key_pair: self.key_pair,
                dpop: self.dpop,
                bound: RwLock::new(None),
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                http: Http::new(client, self.http_timeout),
                refresh_margin: self.refresh_margin,
                max_step_ups: self.max_step_ups,
                state: Mutex::new(State::default()),
            }),
        })
    }
}

impl fmt::Debug for OAuthBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthBuilder")
            .field("server", &self.server)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}
