//! The peers the selected pairs need, installed and built once, and the command that starts
//! each side of a pair.

use std::{path::PathBuf, process::Command};

use anyhow::{Result, bail};

use super::pairs::{Everything, Ours, Pair, Peer, Py, Py1, PyStdio, Ts, Ts2, TsConnect};
use crate::cmd::{self, build_example, target_dir};
use crate::tools;

/// The scope the protected echo server requires.
const PROTECTED_SCOPE: &str = "mcp";

/// What the selected pairs need, installed and built once.
#[derive(Debug)]
pub(super) struct Peers {
    pub(super) node: Option<tools::Node>,
    node_v2: Option<tools::Node>,
    python: Option<tools::Python>,
    python_v1: Option<tools::Python>,
    echo_server: Option<PathBuf>,
    interop_client: Option<PathBuf>,
    /// The `mcp-gateway` binary, for the pairs that serve a stdio server or connect through it.
    gateway: Option<PathBuf>,
    /// `target/interop`: one directory of logs per pair.
    pub(super) logs: PathBuf,
}

impl Peers {
    pub(super) fn prepare(pairs: &[&Pair]) -> Result<Peers> {
        let uses = |peer: Peer| {
            pairs.iter().any(|p| {
                let sides = [p.client, p.server];
                sides.contains(&peer)
                    || (peer == Ts && (p.protected || sides.contains(&Everything)))
                    || (peer == Ts && sides.contains(&TsConnect))
                    || (peer == Py && sides.contains(&PyStdio))
            })
        };
        let node = uses(Ts).then(tools::node).transpose()?;
        let node_v2 = uses(Ts2).then(tools::node_v2).transpose()?;
        let python = uses(Py).then(tools::python).transpose()?;
        let python_v1 = uses(Py1).then(tools::python_v1).transpose()?;
        let echo_server = if pairs.iter().any(|p| p.server == Ours) {
            Some(build_example("echo_server")?)
        } else {
            None
        };
        let interop_client = if pairs.iter().any(|p| p.client == Ours) {
            Some(build_example("interop_client")?)
        } else {
            None
        };
        let gateway = pairs
            .iter()
            .any(|p| p.server.behind_gateway() || p.client == TsConnect)
            .then(build_gateway)
            .transpose()?;
        Ok(Peers {
            gateway,
            node,
            node_v2,
            python,
            python_v1,
            echo_server,
            interop_client,
            logs: target_dir()?.join("interop"),
        })
    }

    pub(super) fn server(&self, pair: &Pair) -> Result<Command> {
        let mut command = match pair.server {
            Ours => {
                let mut command = Command::new(self.echo_server.as_ref().expect("built"));
                // A free port unless the pair names one (a protected pair's `--addr`, which
                // wins over the variable): clap refuses a flag given twice.
                command.env("MCP_ADDR", "127.0.0.1:0");
                if std::env::var_os("RUST_LOG").is_none() {
                    // In the pair's log, for when it fails; NO_COLOR keeps the log plain text.
                    command
                        .env("RUST_LOG", "mcp_streamable_server=debug")
                        .env("NO_COLOR", "1");
                }
                command
            }
            Ts => self.node.as_ref().expect("installed").script("server.mjs"),
            Ts2 => self
                .node_v2
                .as_ref()
                .expect("installed")
                .script("server.mjs"),
            Py => self.python.as_ref().expect("installed").script("server.py"),
            Everything | PyStdio => return Ok(self.gateway_serve(pair)),
            Py1 | TsConnect => bail!("{} is a client only", pair),
        };
        command.args(pair.flags);
        Ok(command)
    }

    /// `mcp-gateway serve --addr 127.0.0.1:0 FLAGS -- CHILD`, the child the pair's server.
    fn gateway_serve(&self, pair: &Pair) -> Command {
        let mut command = Command::new(self.gateway.as_ref().expect("built"));
        command
            // One warm child: a pair needs no more, and the child that saw a cancellation is
            // the one a per-request client asks about it next.
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--stop-grace",
                "1",
                "--pool-size",
                "1",
            ])
            .args(pair.flags)
            .arg("--");
        // The child's command line is the one the SDK's script would run, with absolute paths.
        let child = match pair.server {
            Everything => self.node.as_ref().expect("installed").script(EVERYTHING),
            _ => self
                .python
                .as_ref()
                .expect("installed")
                .script("stdio_server.py"),
        };
        command.arg(child.get_program()).args(child.get_args());
        if pair.server == Everything {
            command.arg("stdio");
        }
        for (name, value) in child.get_envs() {
            if let Some(value) = value {
                command.env(name, value);
            }
        }
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "mcp_gateway=debug,info");
        }
        command
    }

    pub(super) fn client(&self, pair: &Pair, url: &str) -> Result<Command> {
        let script = || {
            let path = pair.client_script(pair.client);
            path.split_once('/').map_or(path, |(_, name)| name)
        };
        let mut command = match pair.client {
            Ours => Command::new(self.interop_client.as_ref().expect("built")),
            Ts | TsConnect => self.node.as_ref().expect("installed").script(script()),
            Ts2 => self.node_v2.as_ref().expect("installed").script(script()),
            Py => self.python.as_ref().expect("installed").script(script()),
            Py1 => self.python_v1.as_ref().expect("installed").script(script()),
            Everything | PyStdio => bail!("{} is a server only", pair),
        };
        if pair.client == TsConnect {
            command.env("MCP_GATEWAY", self.gateway.as_ref().expect("built"));
        }
        command.args([url, pair.scenario]);
        Ok(command)
    }
}

/// The everything server's entry point, under `interop/ts`.
const EVERYTHING: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";

/// `cargo build -p mcp-gateway --bin mcp-gateway`, and the binary it made.
fn build_gateway() -> Result<PathBuf> {
    cmd::run(&mut cmd::cargo(&[
        "build",
        "-p",
        "mcp-gateway",
        "--bin",
        "mcp-gateway",
    ]))?;
    Ok(target_dir()?.join("debug/mcp-gateway"))
}

/// echo_server's flags for a protected pair whose authorization server is at `issuer`. The
/// audience is the endpoint's URL, so the port is picked here, by binding port 0 and letting it
/// go; another process taking it in between makes the pair fail to start, not pass.
pub(super) fn protected_flags(issuer: &str) -> Result<Vec<String>> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    Ok(vec![
        "--addr".into(),
        format!("127.0.0.1:{port}"),
        "--auth-issuer".into(),
        issuer.into(),
        "--auth-jwks-url".into(),
        format!("{issuer}/jwks"),
        "--auth-audience".into(),
        format!("http://127.0.0.1:{port}/mcp"),
        "--auth-scope".into(),
        PROTECTED_SCOPE.into(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The audience a protected echo server checks is the URL it listens at.
    #[test]
    fn a_protected_server_is_its_own_audience() {
        let flags = protected_flags("http://127.0.0.1:9").unwrap();
        let value = |name: &str| {
            let at = flags.iter().position(|flag| flag == name).unwrap();
            flags[at + 1].clone()
        };
        assert_eq!(
            value("--auth-audience"),
            format!("http://{}/mcp", value("--addr"))
        );
        assert_eq!(value("--auth-jwks-url"), "http://127.0.0.1:9/jwks");
        assert_eq!(value("--auth-issuer"), "http://127.0.0.1:9");
    }
}
