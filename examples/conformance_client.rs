//! The client the official MCP conformance suite (`@modelcontextprotocol/conformance`, client
//! mode) drives: an rmcp client over this project's Streamable HTTP client through `mcp-rmcp`.
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=initialize cargo run --example conformance_client -- URL
//! cargo run --example conformance_client -- --scenario initialize URL
//! ```
//!
//! The suite starts a test server for a scenario, then runs this program with the server's URL
//! as its last argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO` (and, when the
//! suite runs at a given revision, that revision in `MCP_CONFORMANCE_PROTOCOL_VERSION`). The
//! suite judges what it saw on the wire; this program exits non-zero only when it could not do
//! its part. Scenarios:
//!
//! - `initialize`: initialize, list the tools, close;
//! - `tools_call`: initialize, list the tools, call `add_numbers {a, b}`, close;
//! - `sse-retry`: initialize, call `test_reconnection`, whose stream the server closes after a
//!   priming event with `retry: 500`: the client must wait that long, resume the stream with
//!   GET and `Last-Event-ID`, and get the result there (SEP-1699);
//! - `request-metadata` (2026-07-28): list the tools, each request carrying its `_meta` and the
//!   matching `MCP-Protocol-Version`; the suite refuses the first with -32022 to see a retry;
//! - `http-standard-headers` (2026-07-28): list and call the tools, list and read the resources,
//!   list and get the prompts, each with its `Mcp-Method` and `Mcp-Name`;
//! - `auth/*`: list the tools and call `test-tool` through a protected server, the client
//!   authorizing itself with `mcp_streamable_http::oauth`: the authorization-code grant, whose
//!   browser step follows the test server's redirect without a user (`support/browser.rs`),
//!   or, for `auth/client-credentials-*`, the client-credentials grant. The suite passes
//!   credentials in `MCP_CONFORMANCE_CONTEXT` (JSON: `client_id`, `client_secret`,
//!   `private_key_pem`, `signing_algorithm`, `issuer`); the client's metadata document URL is
//!   the one the suite expects, [`CLIENT_METADATA_URL`]. The extensions: `auth/dpop` and
//!   `auth/dpop-nonce` add DPoP with a key made for the run to the authorization-code grant;
//!   `auth/enterprise-managed-authorization` exchanges the ID token of the context
//!   (`idp_id_token`, at `idp_token_endpoint` as `idp_client_id`) for an ID-JAG, and
//!   `auth/wif-jwt-bearer` grants with the workload JWT of the context (`valid_jwt`).

use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Parser as _;
use mcp_streamable_http::client::Client;
use mcp_streamable_http::oauth::{
    DpopKey, IdentityProvider, OAuth, OAuthBuilder, PrivateKeyJwt, Registration, Secret,
};
use mcp_streamable_http::transport::Transport;
use rmcp::model::{
    CallToolRequestParams, ClientConfig, GetPromptRequestParams, ProtocolVersion,
    ReadResourceRequestParams,
};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::json;
use support::browser;

/// The whole scenario must finish within this, well inside the suite's own 30 s limit.
const SCENARIO_LIMIT: Duration = Duration::from_secs(20);
/// The client metadata document URL the suite's `auth/basic-cimd` expects as `client_id`.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// The redirect URI of the authorization-code grant: never listened on, since the headless
/// browser reads the redirect instead of following it.
const REDIRECT_URI: &str = "http://127.0.0.1:3000/callback";

/// The client the official MCP conformance suite drives, one scenario a run. The suite appends
/// the test server's URL to the command line and names the rest in the environment variables
/// shown (its own names, not `MCP_` and the flag's): the flags are for running it by hand.
#[derive(Debug, clap::Parser)]
#[command(name = "conformance_client")]
struct Args {
    /// The test server's MCP endpoint.
    #[arg(env = "MCP_URL", value_name = "URL", value_parser = http_url)]
    url: String,
    /// The scenario to run: initialize, tools_call, sse-retry, request-metadata,
    /// http-standard-headers, auth/*.
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO")]
    scenario: String,
    /// The protocol revision to speak; the newest with an `initialize` when not given.
    #[arg(long, env = "MCP_CONFORMANCE_PROTOCOL_VERSION", value_name = "VERSION")]
    protocol_version: Option<String>,
    /// The credentials of the `auth/*` scenarios, a JSON object.
    #[arg(
        long,
        env = "MCP_CONFORMANCE_CONTEXT",
        value_name = "JSON",
        hide_env_values = true
    )]
    context: Option<String>,
}

/// An `http` or `https` URL.
fn http_url(value: &str) -> Result<String, String> {
    if value.starts_with("http://") || value.starts_with("https://") {
        Ok(value.to_owned())
    } else {
        Err("an http:// or https:// URL".to_owned())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let scenario = args.scenario.clone();
    tokio::time::timeout(SCENARIO_LIMIT, run(&args))
        .await
        .with_context(|| format!("scenario {scenario} did not finish in {SCENARIO_LIMIT:?}"))??;
    eprintln!("conformance_client: {scenario} done");
    Ok(())
}

async fn run(args: &Args) -> anyhow::Result<()> {
    let (url, scenario) = (args.url.as_str(), args.scenario.as_str());
    let tools: &[(&str, serde_json::Value)] = match scenario {
        "initialize" => &[],
        "tools_call" => &[("add_numbers", json!({"a": 5, "b": 3}))],
        "sse-retry" => &[("test_reconnection", json!({}))],
        // 2026-07-28: the metadata of every request, then the mirrored headers of each method
        // that has them.
        "request-metadata" => &[],
        "http-standard-headers" => &[
            ("test_headers", json!({})),
            ("my-hyphenated-tool", json!({})),
        ],
        auth if auth.starts_with("auth/") => &[("test-tool", json!({}))],
        other => bail!(
            "unknown scenario {other:?} (initialize, tools_call, sse-retry, request-metadata, \
             http-standard-headers, auth/*)"
        ),
    };
    // The revision the suite asks for, if it names one; otherwise the newest with an initialize
    // handshake. rmcp runs the lifecycle of the revision: initialize up to 2025-11-25, the
    // per-request protocol from 2026-07-28, which the transport carries with its headers.
    let version = match &args.protocol_version {
        Some(asked) => ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .find(|known| known.as_str() == asked)
            .cloned()
            .with_context(|| format!("protocol version {asked} is not one this client runs"))?,
        None => ProtocolVersion::LATEST_WITH_INITIALIZE,
    };
    let mut config = ClientConfig::default();
    config.protocol_version = version.clone();
    config.client_info.name = "mcp-streamable-http-conformance-client".into();
    config.client_info.version = env!("CARGO_PKG_VERSION").into();

    // In `sse-retry` the suite's server takes the first GET after the tool call for the
    // client's resumption and checks its `Last-Event-ID`. The standalone stream's GET, opened
    // once `notifications/initialized` is accepted, can land after the tool call on a loaded
    // machine and be judged as a resumption without one; without it, the only GET is the
    // resumption the scenario is about.
    let standalone = scenario != "sse-retry";
    let mut builder = Client::builder(url).standalone_stream(standalone);
    if scenario.starts_with("auth/") {
        builder = builder.auth(oauth(url, scenario, args.context.as_deref())?);
    }
    let connection = builder.build()?.connect().await?;
    let transport = mcp_streamable_http::rmcp_adapter::client(connection);
    let client = if version.has_initialize() {
        config.serve(transport).await.context("initialize")?
    } else {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![version],
        };
        config
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .context("server/discover")?
    };
    let listed = client.list_tools(None).await.context("tools/list")?;
    eprintln!(
        "tools: {:?}",
        listed.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    for (name, arguments) in tools {
        if !listed.tools.iter().any(|t| t.name == *name) {
            continue;
        }
        let mut params = CallToolRequestParams::new(*name);
        params.arguments = arguments.as_object().cloned();
        let result = client
            .call_tool(params)
            .await
            .with_context(|| format!("tools/call {name}"))?;
        eprintln!("{name}: {}", serde_json::to_string(&result.content)?);
    }
    if scenario == "http-standard-headers" {
        let resources = client
            .list_resources(None)
            .await
            .context("resources/list")?;
        for resource in resources.resources.iter().take(2) {
            let params = ReadResourceRequestParams::new(resource.uri.clone());
            client
                .read_resource(params)
                .await
                .with_context(|| format!("resources/read {}", resource.uri))?;
        }
        let prompts = client.list_prompts(None).await.context("prompts/list")?;
        if let Some(prompt) = prompts.prompts.first() {
            let params = GetPromptRequestParams::new(prompt.name.clone());
            client
                .get_prompt(params)
                .await
                .with_context(|| format!("prompts/get {}", prompt.name))?;
        }
    }
    client.cancel().await.context("closing the session")?;
    Ok(())
}

/// The OAuth provider of an `auth/*` scenario, from the suite's `context`.
fn oauth(url: &str, scenario: &str, context: Option<&str>) -> anyhow::Result<OAuth> {
    let context: serde_json::Value = match context {
        Some(json) => serde_json::from_str(json).context("MCP_CONFORMANCE_CONTEXT")?,
        None => json!({}),
    };
    let text = |key: &str| context.get(key).and_then(|v| v.as_str());
    let mut builder = OAuth::builder(url).client_name("mcp-streamable-http-conformance-client");
    let registration = text("client_id").map(|id| match text("client_secret") {
        Some(secret) => Registration::with_secret(id, secret),
        None => Registration::new(id),
    });
    if let Some(registration) = registration {
        builder = builder.preregistered(registration, text("issuer"));
    }
    if let Some(pem) = text("private_key_pem") {
        let algorithm = text("signing_algorithm").unwrap_or("ES256");
        builder = builder.private_key(PrivateKeyJwt::from_pem(pem, algorithm)?);
    }
    builder = match scenario {
        s if s.starts_with("auth/client-credentials") => builder.client_credentials(),
        "auth/enterprise-managed-authorization" => {
            let idp = IdentityProvider::new(
                text("idp_token_endpoint").context("no idp_token_endpoint")?,
                Registration::new(text("idp_client_id").context("no idp_client_id")?),
                Secret::new(text("idp_id_token").context("no idp_id_token")?),
            );
            builder.enterprise_managed(idp)
        }
        "auth/wif-jwt-bearer" => {
            builder.workload_identity(Secret::new(text("valid_jwt").context("no valid_jwt")?))
        }
        "auth/dpop" | "auth/dpop-nonce" => authorization_code(builder).dpop(DpopKey::generate()?),
        _ => authorization_code(builder),
    };
    Ok(builder.build()?)
}

/// The authorization-code grant through the headless browser, the client identified by its
/// metadata document where the server takes one.
fn authorization_code(builder: OAuthBuilder) -> OAuthBuilder {
    builder
        .client_metadata_url(CLIENT_METADATA_URL)
        .authorization_code(browser::Headless {
            redirect_uri: REDIRECT_URI.into(),
        })
}
