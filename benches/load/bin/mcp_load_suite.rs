//! `mcp-load-suite`: the load benchmark behind `cargo xtask bench --load`; see [`load::suite`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::suite::run(load::suite::Args::parse())
}
