//! `mcp-proxy`: a load balancer without session affinity in front of several nodes, for the
//! load suite's rows of several nodes and for `mcp-failover`.
//!
//! ```text
//! mcp-proxy [--away] --node 127.0.0.1:PORT --node 127.0.0.1:PORT [...]
//! ```
//!
//! Each HTTP request goes to the next node in turn (round robin per request, whatever session
//! it names), so consecutive requests of one session land on different nodes; with `--away`,
//! every request of a session goes to a node other than the one that answered its
//! `initialize`, its holder, so that every request hops. It prints `listening on
//! http://ADDR/mcp` first (a loopback port the OS picks) and serves until killed.
//!
//! The proxy is the one the examples' tests run (`examples/support/proxy.rs`, from the
//! examples' support library): the suite measures the proxy those tests trust, not a copy that
//! could drift from it.

use std::net::SocketAddr;

use support::proxy::{RoundRobin, Routing};

/// A load balancer without session affinity in front of several nodes.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-proxy")]
pub struct Args {
    /// Sends every request of a session to a node other than the one that answered its
    /// `initialize`, rather than to the next node in turn.
    #[arg(long)]
    pub away: bool,
    /// A node, `IP:PORT`; given once per node.
    #[arg(long = "node", value_name = "IP:PORT", required = true)]
    pub nodes: Vec<SocketAddr>,
}

/// Runs `mcp-proxy`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let routing = if args.away {
        Routing::Away
    } else {
        Routing::RoundRobin
    };
    // One thread: a proxy beside the load generator should not take more than its core.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (_proxy, addr) = RoundRobin::start_routing(args.nodes, routing).await;
        println!("listening on http://{addr}/mcp");
        std::future::pending::<()>().await;
    });
    Ok(())
}
