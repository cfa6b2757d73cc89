//! `mcp-load`: the load generator; see [`load::generator`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::generator::run(load::generator::Args::parse())
}
