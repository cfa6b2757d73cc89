//! `mcp-client-load`: a client library under load; see [`load::client`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::client::run(load::client::Args::parse())
}
