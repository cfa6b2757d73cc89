//! `mcp-flood`: our server with a `flood` tool; see [`load::serve::flood`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::serve::flood::run(load::serve::flood::Args::parse())
}
