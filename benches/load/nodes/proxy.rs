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

use anyhow::{Context as _, bail};
use support::proxy;

const USAGE: &str = "usage: mcp-proxy [--away] --node IP:PORT --node IP:PORT [...]";

fn parse_args() -> anyhow::Result<(Vec<SocketAddr>, proxy::Routing)> {
    let mut nodes = Vec::new();
    let mut routing = proxy::Routing::RoundRobin;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--node" => {
                let value = args
                    .next()
                    .context("--node needs a value, e.g. 127.0.0.1:8080")?;
                nodes.push(
                    value
                        .parse()
                        .with_context(|| format!("bad --node {value:?}: IP:PORT"))?,
                );
            }
            "--away" => routing = proxy::Routing::Away,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    if nodes.is_empty() {
        bail!("no --node\n{USAGE}");
    }
    Ok((nodes, routing))
}

fn main() -> anyhow::Result<()> {
    let (nodes, routing) = parse_args()?;
    // One thread: a proxy beside the load generator should not take more than its core.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (_proxy, addr) = proxy::RoundRobin::start_routing(nodes, routing).await;
        println!("listening on http://{addr}/mcp");
        std::future::pending::<()>().await;
    });
    Ok(())
}
