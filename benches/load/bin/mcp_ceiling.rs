//! `mcp-ceiling`: bare hyper, the ceiling; see [`load::serve::ceiling`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::serve::ceiling::run(load::serve::ceiling::Args::parse())
}
