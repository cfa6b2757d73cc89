//! `mcp-listen-fanout`: a change's way to every listen stream of two nodes; see
//! [`load::fanout`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::fanout::run(load::fanout::Args::parse())
}
