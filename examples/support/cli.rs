//! The flags the example servers share, for their clap command lines: each also read from its
//! `MCP_` variable.

use mcp_streamable_http::server::{AllowList, Config};

/// The `Host` names and `Origin`s a server answers besides its defaults, against DNS rebinding
/// (`Config::allowed_hosts`, `Config::allowed_origins`): `#[command(flatten)]` it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Allowed {
    /// A `Host` name to answer besides the loopback ones (always answered): the server's
    /// public name behind a reverse proxy. Repeatable; the variable takes a comma-separated
    /// list.
    #[arg(
        long,
        visible_alias = "host",
        env = "MCP_ALLOWED_HOST",
        value_name = "NAME"
    )]
    #[arg(value_delimiter = ',')]
    pub allowed_host: Vec<String>,
    /// An `Origin` whose pages are answered, whole (`https://app.example.com`), in place of
    /// the default: pages served from loopback. Repeatable, as the variable's list is.
    #[arg(
        long,
        env = "MCP_ALLOWED_ORIGIN",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    pub allowed_origin: Vec<String>,
}

impl Allowed {
    /// `config` answering these names and origins; as it is without the flags.
    pub fn apply(self, mut config: Config) -> Config {
        if !self.allowed_host.is_empty() {
            let loopback = ["localhost", "127.0.0.1", "[::1]"].map(String::from);
            let hosts = self.allowed_host.into_iter().chain(loopback).collect();
            config = config.allowed_hosts(AllowList::List(hosts));
        }
        if !self.allowed_origin.is_empty() {
            config = config.allowed_origins(AllowList::List(self.allowed_origin));
        }
        config
    }
}

/// `--state-key`: the 32 bytes that seal `requestState`, as 64 hexadecimal digits, one key for
/// every node of a deployment.
pub fn state_key(value: &str) -> Result<[u8; 32], String> {
    let digits = value.as_bytes();
    let mut key = [0; 32];
    if digits.len() != 64 {
        return Err("64 hexadecimal digits (32 bytes)".to_owned());
    }
    for (byte, pair) in key.iter_mut().zip(digits.chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|e| e.to_string())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| format!("{pair:?} is not hexadecimal"))?;
    }
    Ok(key)
}
