//! rmcp 3.11.0's own client: `().serve(transport)`-style startup over its
//! `StreamableHttpClientTransport`, then `call_tool` from every caller on the one
//! `RunningService`, as an rmcp application would.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation,
    ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Map, Value};

use super::callers::{self, CLOSE_TIMEOUT, Echo, Measured, Plan, START_TIMEOUT};

/// Which reqwest client carries rmcp's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pool {
    /// The one `StreamableHttpClientTransport::from_config` builds: no idle connection kept
    /// (`pool_max_idle_per_host(0)`, against delayed-ACK stalls), so every POST connects anew.
    RmcpDefault,
    /// reqwest's defaults: idle connections kept for reuse, as ours keeps them.
    KeepAlive,
}

/// The client side of the session: declares what it is and which version it asks for; every
/// request from the server gets rmcp's default answer.
#[derive(Debug, Clone, Copy)]
struct Handler;

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // The version ours asks for too (rmcp's own default would be 2026-07-28, which has no
        // `initialize`; the server would answer 2025-11-25 anyway).
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mcp-client-load", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

/// Runs the closed loop with rmcp's client against `url`.
pub(crate) async fn run(url: &str, plan: &Plan, pool: Pool) -> anyhow::Result<Measured> {
    // As many POSTs at once as there are callers (rmcp's default is 16), so that the limit is
    // never rmcp's setting.
    let config =
        StreamableHttpClientTransportConfig::with_uri(url).max_concurrent_requests(plan.callers);
    let transport = match pool {
        Pool::RmcpDefault => StreamableHttpClientTransport::from_config(config),
        Pool::KeepAlive => {
            // `TCP_NODELAY` is reqwest's default (0.13); said here so that it stays on.
            let http = reqwest::Client::builder()
                .tcp_nodelay(true)
                .build()
                .context("building the reqwest client")?;
            StreamableHttpClientTransport::with_client(http, config)
        }
    };
    let service = tokio::time::timeout(START_TIMEOUT, Handler.serve(transport))
        .await
        .context("the session did not start in time")?
        .context("starting the session")?;
    let rmcp = Rmcp {
        service: Arc::new(service),
    };
    let mut measured = callers::run(rmcp.clone(), plan).await?;
    // Every caller has returned: this is the last handle, and closing it ends the session.
    let Ok(mut service) = Arc::try_unwrap(rmcp.service) else {
        bail!("a caller still holds the rmcp client");
    };
    match service.close_with_timeout(CLOSE_TIMEOUT).await {
        Ok(Some(_)) => {}
        Ok(None) => measured
            .tally
            .errors
            .add(format!("closing the session took over {CLOSE_TIMEOUT:?}")),
        Err(err) => measured
            .tally
            .errors
            .add(format!("closing the session: {err:#}")),
    }
    Ok(measured)
}

/// What each caller holds: the one running client.
#[derive(Debug, Clone)]
struct Rmcp {
    service: Arc<RunningService<RoleClient, Handler>>,
}

impl Echo for Rmcp {
    async fn echo(&self, text: String) -> anyhow::Result<()> {
        let mut arguments = Map::new();
        arguments.insert("text".to_owned(), Value::String(text.clone()));
        let params = CallToolRequestParams::new("echo").with_arguments(arguments);
        let result = self
            .service
            .call_tool(params)
            .await
            .context("tools/call failed")?;
        match result.content.as_slice() {
            [ContentBlock::Text(content)] if result.is_error != Some(true) => {
                if content.text == text {
                    Ok(())
                } else {
                    bail!("wrong echo: expected {text:?}, got {:?}", content.text)
                }
            }
            _ => bail!("wrong echo: expected {text:?}, got {result:?}"),
        }
    }

    fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }
}
