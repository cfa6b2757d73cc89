//! `mcp-proxy`: a load balancer without session affinity; see [`load::serve::proxy`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::serve::proxy::run(load::serve::proxy::Args::parse())
}
