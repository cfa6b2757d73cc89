//! `mcp-listen-fanout`: how long a change announced on one node takes to reach every open
//! 2026-07-28 listen stream of two nodes sharing one Redis (issue 28's figure: 1,000 streams
//! within 100 ms).
//!
//! ```text
//! mcp-listen-fanout [--streams 1000] [--rounds 20] [--redis URL]
//! ```
//!
//! It starts a `redis-server` of its own (unless given `--redis`), two nodes in this process
//! (each a `StreamableHttpService` whose application serves listen requests with the server
//! crate's `Subscriptions` on `RedisBackend::notification_bus`), and opens half the streams on
//! each through `handle` (the service's whole path but the sockets), each read as SSE by a task
//! of its own. Each round, node A announces a change; the time is from the announcement to the
//! last stream's notification. It prints every round and the median.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use mcp_streamable_redis::testing::RedisServer;
use mcp_streamable_redis::{Options, RedisBackend};
use mcp_streamable_server::{Change, Config, StreamableHttpService, Subscriptions};
use mcp_transport::Connection as _;
use tokio::sync::mpsc;

use crate::stats::median;

/// How long a round may take before the run is called failed.
const ROUND_LIMIT: Duration = Duration::from_secs(10);

/// The command line of `mcp-listen-fanout`.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-listen-fanout")]
pub struct Args {
    /// Listen streams, half on each node.
    #[arg(long, default_value_t = 1_000)]
    streams: usize,
    /// Announcements measured.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// A Redis to use instead of one of the run's own.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
}

/// Runs the measurement.
pub fn run(args: Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(measure(args))
}

async fn measure(args: Args) -> anyhow::Result<()> {
    let own = match &args.redis {
        Some(_) => None,
        None => Some(RedisServer::start().context("starting redis-server")?),
    };
    let url = args
        .redis
        .clone()
        .unwrap_or_else(|| own.as_ref().map(RedisServer::url).unwrap_or_default());
    let mut nodes = Vec::new();
    for name in ["a", "b"] {
        let backend = RedisBackend::connect(&url, Options::default().node(name)).await?;
        let subscriptions = Subscriptions::new(backend.notification_bus());
        nodes.push((node(&subscriptions), subscriptions, backend));
    }
    let (heard_tx, mut heard) = mpsc::unbounded_channel();
    for i in 0..args.streams {
        let service = &nodes[i % 2].0;
        open(service, i, heard_tx.clone()).await?;
    }
    let mut times = Vec::with_capacity(args.rounds);
    for round in 1..=args.rounds {
        let start = Instant::now();
        nodes[0].1.announce(Change::ToolsListChanged).await?;
        for _ in 0..args.streams {
            let got = tokio::time::timeout(ROUND_LIMIT, heard.recv()).await;
            ensure!(
                matches!(got, Ok(Some(_))),
                "round {round}: a stream heard nothing in {ROUND_LIMIT:?}"
            );
        }
        let took = start.elapsed();
        println!(
            "round {round}: {} streams told in {:.2} ms",
            args.streams,
            took.as_secs_f64() * 1e3
        );
        times.push(took.as_secs_f64() * 1e3);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "median {:.2} ms over {} rounds, {} streams on two nodes",
        median(times),
        args.rounds,
        args.streams
    );
    Ok(())
}

/// A node whose application serves listen requests with `subscriptions`.
fn node(subscriptions: &Subscriptions) -> StreamableHttpService {
    let subscriptions = subscriptions.clone();
    StreamableHttpService::new(Config::default(), move |mut conn, _parts| {
        let subscriptions = subscriptions.clone();
        async move {
            if let Ok(Some(mcp_jsonrpc::Message::Request(request))) = conn.recv().await {
                subscriptions.serve(&mut conn, &request).await;
            }
        }
    })
}

/// Opens listen stream `i` on `service` and reads it in a task that reports each notification
/// after the acknowledgement.
async fn open(
    service: &StreamableHttpService,
    i: usize,
    heard: mpsc::UnboundedSender<usize>,
) -> anyhow::Result<()> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let request = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(body.to_string())))?;
    let response = service.handle(request).await;
    ensure!(
        response.status() == http::StatusCode::OK,
        "listen refused: {}",
        response.status()
    );
    let mut body = response.into_body();
    let mut scanner = mcp_sse::Scanner::new();
    let mut acknowledged = false;
    // Waits for the acknowledgement here, so that every stream is open before the rounds.
    while !acknowledged {
        let frame = tokio::time::timeout(ROUND_LIMIT, body.frame())
            .await?
            .context("stream ended")??;
        if let Ok(data) = frame.into_data() {
            scanner.feed(&data);
        }
        while let Some(event) = scanner.next_event()? {
            acknowledged |= event
                .data
                .contains("notifications/subscriptions/acknowledged");
        }
    }
    tokio::spawn(async move {
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                scanner.feed(&data);
            }
            while let Ok(Some(event)) = scanner.next_event() {
                if event.data.contains("list_changed") && heard.send(i).is_err() {
                    return;
                }
            }
        }
    });
    Ok(())
}
