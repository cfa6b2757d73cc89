//! `mcp-failover`: the failover driver; see [`load::failover`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::failover::run(load::failover::Args::parse())
}
