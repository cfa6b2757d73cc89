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
//! - `http-custom-headers` (2026-07-28): list the tools and call those the suite names in its
//!   context (`toolCalls`), the transport mirroring the `x-mcp-header` arguments into
//!   `Mcp-Param-*` headers (SPEC M8);
//! - `http-invalid-tool-headers` (2026-07-28): list the tools and call each one listed; the
//!   transport left out those whose `x-mcp-header` declarations are invalid;
//! - `sep-2322-client-request-state` (2026-07-28): call the four `test_mrtr_*` tools; rmcp drives
//!   the input-required rounds, each a new request echoing the round's `requestState`, its
//!   elicitations answered by [`Conformance`];
//! - `json-schema-ref-no-deref` (2026-07-28): list the tools, fetching no `$ref`;
//! - `json-schema-2020-12-preservation`: list the tools and call `json_schema_echo` with the
//!   `inputSchema` of `json_schema_2020_12_tool` as it came;
//! - `elicitation-sep1034-client-defaults` (2025-11-25): call
//!   `test_client_elicitation_defaults`, whose elicitation [`Conformance`] accepts with the
//!   schema's defaults;
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
    CallToolRequestParams, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ErrorData, GetPromptRequestParams, ListToolsResult, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Value, json};
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
    /// http-standard-headers, http-custom-headers, http-invalid-tool-headers,
    /// sep-2322-client-request-state, json-schema-ref-no-deref,
    /// json-schema-2020-12-preservation, elicitation-sep1034-client-defaults, auth/*.
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO")]
    scenario: String,
    /// The protocol revision to speak; the newest with an `initialize` when not given.
    #[arg(long, env = "MCP_CONFORMANCE_PROTOCOL_VERSION", value_name = "VERSION")]
    protocol_version: Option<String>,
    /// What the suite passes a scenario, a JSON object: the credentials of the `auth/*`
    /// scenarios, the calls of `http-custom-headers`.
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

/// The scenarios this client knows, for the message about one it does not.
const SCENARIOS: &str = "initialize, tools_call, sse-retry, request-metadata, \
    http-standard-headers, http-custom-headers, http-invalid-tool-headers, \
    sep-2322-client-request-state, json-schema-ref-no-deref, json-schema-2020-12-preservation, \
    elicitation-sep1034-client-defaults, auth/*";

/// The application side of the client: its configuration, and its answer to the server's
/// elicitations (asked in a session, or as an input-required round of 2026-07-28).
#[derive(Debug, Clone)]
struct Conformance {
    config: ClientConfig,
}

impl ClientHandler for Conformance {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(accepted(&schema)))
    }
}

/// What a user accepting a form without typing anything answers (SEP-1034): each property's
/// `default`, and for a boolean without one, `true` (the suite's confirmations).
fn accepted(schema: &Value) -> Value {
    let mut content = serde_json::Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        let value = match property.get("default") {
            Some(default) => default.clone(),
            None if property.get("type") == Some(&json!("boolean")) => json!(true),
            None => continue,
        };
        content.insert(name.clone(), value);
    }
    Value::Object(content)
}

async fn run(args: &Args) -> anyhow::Result<()> {
    let (url, scenario) = (args.url.as_str(), args.scenario.as_str());
    let known = matches!(
        scenario,
        "initialize"
            | "tools_call"
            | "sse-retry"
            | "request-metadata"
            | "http-standard-headers"
            | "http-custom-headers"
            | "http-invalid-tool-headers"
            | "sep-2322-client-request-state"
            | "json-schema-ref-no-deref"
            | "json-schema-2020-12-preservation"
            | "elicitation-sep1034-client-defaults"
    ) || scenario.starts_with("auth/");
    if !known {
        bail!("unknown scenario {scenario:?} ({SCENARIOS})");
    }
    let context: Value = match args.context.as_deref() {
        Some(text) => serde_json::from_str(text).context("MCP_CONFORMANCE_CONTEXT")?,
        None => json!({}),
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
    config.capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}}))?;
    let handler = Conformance { config };

    // In `sse-retry` the suite's server takes the first GET after the tool call for the
    // client's resumption and checks its `Last-Event-ID`. The standalone stream's GET, opened
    // once `notifications/initialized` is accepted, can land after the tool call on a loaded
    // machine and be judged as a resumption without one; without it, the only GET is the
    // resumption the scenario is about.
    let standalone = scenario != "sse-retry";
    let mut builder = Client::builder(url).standalone_stream(standalone);
    if scenario.starts_with("auth/") {
        builder = builder.auth(oauth(url, scenario, &context)?);
    }
    let connection = builder.build()?.connect().await?;
    let transport = mcp_streamable_http::rmcp_adapter::client(connection);
    let client = if version.has_initialize() {
        handler.serve(transport).await.context("initialize")?
    } else {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![version],
        };
        handler
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .context("server/discover")?
    };
    let listed = client.list_tools(None).await.context("tools/list")?;
    eprintln!(
        "tools: {:?}",
        listed.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    for (name, arguments) in calls(scenario, &listed, &context) {
        if !listed.tools.iter().any(|t| t.name == name) {
            continue;
        }
        let mut params = CallToolRequestParams::new(name.clone());
        params.arguments = arguments.as_object().cloned();
        let result = client
            .call_tool(params)
            .await
            .with_context(|| format!("tools/call {name}"))?;
        eprintln!("{name}: {}", serde_json::to_string(&result.content)?);
    }
    if scenario == "http-standard-headers" {
        standard_headers(&client).await?;
    }
    client.cancel().await.context("closing the session")?;
    Ok(())
}

/// The tools a scenario calls, in order, with their arguments: those of the tools listed.
fn calls(scenario: &str, listed: &ListToolsResult, context: &Value) -> Vec<(String, Value)> {
    let call = |name: &str, arguments: Value| (name.to_owned(), arguments);
    match scenario {
        "tools_call" => vec![call("add_numbers", json!({"a": 5, "b": 3}))],
        "sse-retry" => vec![call("test_reconnection", json!({}))],
        "http-standard-headers" => vec![
            call("test_headers", json!({})),
            call("my-hyphenated-tool", json!({})),
        ],
        // The calls the suite's context names, with its arguments.
        "http-custom-headers" => context["toolCalls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| Some(call(c["name"].as_str()?, c["arguments"].clone())))
            .collect(),
        // Every tool the transport kept, with an argument for each string property.
        "http-invalid-tool-headers" => listed
            .tools
            .iter()
            .map(|tool| {
                let schema = Value::Object((*tool.input_schema).clone());
                call(&tool.name, strings(&schema))
            })
            .collect(),
        "sep-2322-client-request-state" => [
            "test_mrtr_echo_state",
            "test_mrtr_no_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_result_type",
        ]
        .into_iter()
        .map(|name| call(name, json!({})))
        .collect(),
        // The focal tool's schema, as rmcp kept it, echoed back.
        "json-schema-2020-12-preservation" => listed
            .tools
            .iter()
            .find(|t| t.name == "json_schema_2020_12_tool")
            .map(|t| Value::Object((*t.input_schema).clone()))
            .map(|schema| call("json_schema_echo", json!({ "schema": schema })))
            .into_iter()
            .collect(),
        "elicitation-sep1034-client-defaults" => {
            vec![call("test_client_elicitation_defaults", json!({}))]
        }
        auth if auth.starts_with("auth/") => vec![call("test-tool", json!({}))],
        _ => Vec::new(),
    }
}

/// Arguments for a schema's top-level string properties: `"x"` each.
fn strings(schema: &Value) -> Value {
    let properties = schema.get("properties").and_then(Value::as_object);
    let arguments: serde_json::Map<String, Value> = properties
        .into_iter()
        .flatten()
        .filter(|(_, p)| p.get("type") == Some(&json!("string")))
        .map(|(name, _)| (name.clone(), json!("x")))
        .collect();
    Value::Object(arguments)
}

/// `http-standard-headers` past the tools: the resources listed and read, the prompts listed
/// and got.
async fn standard_headers(client: &RunningService<RoleClient, Conformance>) -> anyhow::Result<()> {
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
    Ok(())
}

/// The OAuth provider of an `auth/*` scenario, from the suite's `context`.
fn oauth(url: &str, scenario: &str, context: &Value) -> anyhow::Result<OAuth> {
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
