//! `rmcp-echo`: rmcp's server with the `echo` tool; see [`load::serve::rmcp_echo`].

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    load::serve::rmcp_echo::run(load::serve::rmcp_echo::Args::parse())
}
