//! The binary's flags that configure the server crate rather than the gateway: the names and
//! origins answered, authorization, and where the telemetry goes. Each is also read from its
//! `MCP_` variable; `echo_server` takes the same ones.

use std::net::SocketAddr;

use clap::builder::BoolishValueParser;
use mcp_streamable_auth::jwt::JwtVerifier;
use mcp_streamable_auth::{Guard, dpop};
use mcp_streamable_server::{AllowList, Config};

/// The `Host` names and `Origin`s answered besides the defaults (loopback ones), against DNS
/// rebinding: `Config::allowed_hosts` and `Config::allowed_origins`.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Names and origins answered")]
pub(crate) struct Allowed {
    /// A `Host` name to answer besides the loopback ones (always answered): the gateway's
    /// public name, or its name behind a reverse proxy. Repeatable; the variable takes a
    /// comma-separated list.
    #[arg(
        long,
        env = "MCP_ALLOWED_HOST",
        value_name = "NAME",
        value_delimiter = ','
    )]
    allowed_host: Vec<String>,
    /// An `Origin` whose pages are answered, whole (`https://app.example.com`), in place of
    /// the default: pages served from loopback. Repeatable, as the variable's list is.
    #[arg(
        long,
        env = "MCP_ALLOWED_ORIGIN",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    allowed_origin: Vec<String>,
}

impl Allowed {
    /// `config` answering these names and origins; as it is without the flags.
    pub(crate) fn apply(self, mut config: Config) -> Config {
        if !self.allowed_host.is_empty() {
            let loopback = ["localhost", "127.0.0.1", "[::1]"].map(String::from);
            let hosts = self.allowed_host.into_iter().chain(loopback).collect();
            config = config.allowed_hosts(AllowList::List(hosts));
        }
        if !self.allowed_origin.is_empty() {
            config = config.allowed_origins(AllowList::List(self.allowed_origin));
        }
        config
    }
}

/// The `--auth-*` flags: MCP authorization in front of every child, all of issuer, key set
/// and audience, or none.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Authorization")]
pub(crate) struct Auth {
    /// Protects the gateway: every request needs a JWT issued by ISS (compared with `iss`
    /// exactly), else 401 with a challenge naming the resource metadata.
    #[arg(long = "auth-issuer", env = "MCP_AUTH_ISSUER", value_name = "ISS")]
    issuer: Option<String>,
    /// The key set the tokens are signed with (https, or http to the loopback).
    #[arg(long = "auth-jwks-url", env = "MCP_AUTH_JWKS_URL", value_name = "URL")]
    jwks_url: Option<String>,
    /// The audience the tokens must name: the endpoint's URL as clients use it.
    #[arg(long = "auth-audience", env = "MCP_AUTH_AUDIENCE", value_name = "AUD")]
    audience: Option<String>,
    /// A scope every token must carry (403 without it).
    #[arg(long = "auth-scope", env = "MCP_AUTH_SCOPE", value_name = "SCOPE")]
    scope: Option<String>,
    /// Takes DPoP-bound tokens too (RFC 9449), each request with its proof.
    #[arg(long = "auth-dpop", env = "MCP_AUTH_DPOP", value_parser = BoolishValueParser::new())]
    dpop: bool,
}

impl Auth {
    /// `config` behind the guard the flags describe; as it is without them.
    pub(crate) fn apply(self, config: Config) -> Result<Config, Box<dyn std::error::Error>> {
        let (issuer, jwks_url, audience) = match (self.issuer, self.jwks_url, self.audience) {
            (None, None, None) if self.scope.is_none() && !self.dpop => return Ok(config),
            (Some(issuer), Some(jwks_url), Some(audience)) => (issuer, jwks_url, audience),
            _ => {
                return Err(
                    "--auth-issuer, --auth-jwks-url and --auth-audience go together".into(),
                );
            }
        };
        let verifier = JwtVerifier::builder(&issuer, jwks_url, &audience)
            .build()
            .map_err(|e| format!("--auth-jwks-url: {e}"))?;
        let mut guard = Guard::builder(audience)
            .authorization_server(issuer.clone())
            .required_scopes(self.scope);
        if self.dpop {
            guard = guard.dpop(dpop::Config::default());
        }
        let guard = guard
            .build(verifier)
            .map_err(|e| format!("--auth-* settings: {e}"))?;
        tracing::info!("protected: tokens from {issuer}");
        Ok(config.authorization(guard))
    }
}

/// `--metrics IP:PORT`: the metrics in Prometheus's text format. OTLP needs no flag: the
/// standard `OTEL_EXPORTER_OTLP_ENDPOINT` turns it on (`mcp_streamable_telemetry`).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Telemetry")]
pub(crate) struct Metrics {
    /// Serves the server's OpenTelemetry metrics in Prometheus's text format at
    /// `http://IP:PORT/metrics` (port 0 picks a free one; the address is printed).
    #[arg(long, env = "MCP_METRICS", value_name = "IP:PORT")]
    pub(crate) metrics: Option<SocketAddr>,
}
