//! Starting the servers under test and the load generator, each pinned to its own core when
//! the machine allows.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, bail};
use serde::de::DeserializeOwned;

use super::kinds::{METRIC_EXPORT_INTERVAL_MS, Program, ServerKind};
use super::otlp_sink::{Received, Sink};
use crate::cli;

impl ServerKind {
    /// What the load generator is told besides the family's: the protected rows' credentials.
    pub(crate) fn auth_args(&self, launcher: &Launcher) -> Vec<String> {
        match (self.program, &launcher.auth) {
            (Program::Protected { dpop }, Some(auth)) => auth.load_args(dpop),
            _ => Vec::new(),
        }
    }
}

/// Every server listens on a loopback port the OS picks.
const ADDR: [&str; 2] = ["--addr", "127.0.0.1:0"];

/// Where the programs are, and how to pin them.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    /// The `benches` binaries.
    pub(crate) bin_dir: PathBuf,
    /// The echo server example.
    pub(crate) echo_server: PathBuf,
    /// Pin servers to CPU 0 and the load generator to CPU 1.
    pub(crate) pin: bool,
    /// The suite's Redis URL, for the servers on Redis.
    pub(crate) redis: Option<String>,
    /// The suite's authority, for the protected servers.
    pub(crate) auth: Option<super::auth::Authority>,
    /// The echo server of the baseline commit, for the `base` servers.
    pub(crate) baseline: Option<PathBuf>,
}

impl Launcher {
    /// Whether pinning is possible: two cores or more, and `taskset`.
    pub(crate) fn can_pin() -> bool {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        cores >= 2
            && Command::new("taskset")
                .arg("-V")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    }

    /// A command running `program args` on `cpu` (when pinning), with the file descriptor
    /// limit raised to the hard limit (ten thousand idle sessions need as many sockets).
    pub(crate) fn command(&self, cpu: u8, program: &Path, args: &[String]) -> Command {
        let mut command = cli::command("sh");
        command.args([
            "-c",
            r#"ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@""#,
            "sh",
        ]);
        if self.pin {
            command.args(["taskset", "-c", &cpu.to_string()]);
        }
        command.arg(program).args(args);
        command.env_remove("RUST_LOG");
        command
    }

    /// Starts a server and waits for its `listening on URL` line; a server of several nodes
    /// starts each node, then the proxy in front of them.
    pub(crate) fn start(&self, kind: &ServerKind) -> anyhow::Result<Server> {
        let mut args = vec![ADDR[0], ADDR[1]];
        args.extend(kind.args);
        let nodes = match kind.program {
            Program::EchoServer => return self.spawn(kind.key, 0, &self.echo_server, &args),
            Program::Bench(name) => {
                return self.spawn(kind.key, 0, &self.bin_dir.join(name), &args);
            }
            Program::Protected { dpop } => {
                let auth = self
                    .auth
                    .as_ref()
                    .context("no authority for the protected rows")?;
                let extra = auth.server_args(dpop);
                args.extend(extra.iter().map(String::as_str));
                return self.spawn(kind.key, 0, &self.echo_server, &args);
            }
            Program::Baseline { .. } => {
                let baseline = self
                    .baseline
                    .as_ref()
                    .context("no --baseline-echo-server for the baseline's rows")?;
                return self.spawn(kind.key, 0, baseline, &args);
            }
            Program::Otlp { sampled } => return self.start_exporting(kind, &args, sampled),
            Program::RedisNodes { nodes, away } => (nodes, away),
        };
        self.start_nodes(kind, nodes, &args)
    }

    /// Starts an OTLP sink, pinned where the load generator runs, and the echo server with
    /// `args`, exporting its spans and metrics to the sink; its traces sampled at the ratio
    /// `sampled`, or all.
    fn start_exporting(
        &self,
        kind: &ServerKind,
        args: &[&str],
        sampled: Option<&str>,
    ) -> anyhow::Result<Server> {
        let sink = Sink::start(self.pin).context("starting the OTLP sink")?;
        let mut env = vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.as_str()),
            ("OTEL_METRIC_EXPORT_INTERVAL", METRIC_EXPORT_INTERVAL_MS),
        ];
        if let Some(ratio) = sampled {
            env.push(("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"));
            env.push(("OTEL_TRACES_SAMPLER_ARG", ratio));
        }
        let mut server = self.spawn_with_env(kind.key, 0, &self.echo_server, args, &env)?;
        server.sink = Some(sink);
        Ok(server)
    }

    /// Starts `nodes` nodes of the echo server on the suite's Redis with `args`, and, for more
    /// than one, the proxy in front of them.
    fn start_nodes(
        &self,
        kind: &ServerKind,
        (nodes, away): (u8, bool),
        args: &[&str],
    ) -> anyhow::Result<Server> {
        let redis = self
            .redis
            .as_deref()
            .context("no Redis: the suite could not start redis-server")?;
        let mut started: Vec<Server> = Vec::new();
        for n in 1..=nodes {
            let node = format!("suite-{}-{n}-{}", kind.key, std::process::id());
            let mut args = args.to_vec();
            args.extend(["--redis", redis, "--node", &node]);
            let log = format!("{}-{n}", kind.key);
            started.push(self.spawn(&log, 0, &self.echo_server, &args)?);
        }
        let mut first = started.remove(0);
        if started.is_empty() {
            return Ok(first);
        }
        let mut args = Vec::new();
        if away {
            args.push("--away");
        }
        for node in std::iter::once(&first).chain(&started) {
            let addr = node
                .url
                .trim_start_matches("http://")
                .trim_end_matches("/mcp");
            args.extend(["--node", addr]);
        }
        let proxy = self.spawn("proxy", 1, &self.bin_dir.join("mcp-proxy"), &args)?;
        first.url.clone_from(&proxy.url);
        first.side.push(("proxy", proxy.pid));
        first.others.push(proxy);
        for node in started {
            first.pids.push(node.pid);
            first.others.push(node);
        }
        Ok(first)
    }

    /// Starts `program args` on `cpu` and waits for its `listening on URL` line; its stderr
    /// goes to a file named after `log`.
    pub(crate) fn spawn(
        &self,
        log: &str,
        cpu: u8,
        program: &Path,
        args: &[&str],
    ) -> anyhow::Result<Server> {
        self.spawn_with_env(log, cpu, program, args, &[])
    }

    /// [`spawn`](Self::spawn) with the variables `env` set for the program.
    fn spawn_with_env(
        &self,
        log: &str,
        cpu: u8,
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Server> {
        if !program.exists() {
            bail!(
                "{} not found: build it in release first (cargo build --release -p benches \
                 --bins; cargo build --release --example echo_server)",
                program.display()
            );
        }
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        // Whatever a server says on stderr goes to a file: nothing it prints can slow the
        // suite down, and the file is there to read if it fails.
        let log = std::env::temp_dir().join(format!("mcp-load-suite-{log}.log"));
        let stderr =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = self
            .command(cpu, program, &args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "{} did not start: {line:?} (its stderr is in {})",
                program.display(),
                log.display()
            );
        };
        let url = url.to_owned();
        // Whatever else it prints is read and dropped, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let _ = stdout.read_to_end(&mut Vec::new());
        });
        let pid = child.id();
        Ok(Server {
            pids: vec![pid],
            pid,
            child,
            url,
            side: Vec::new(),
            others: Vec::new(),
            sink: None,
        })
    }

    /// Runs the load generator with `args` and reads its `--json` report.
    pub(crate) fn load<R: DeserializeOwned>(&self, args: &[String]) -> anyhow::Result<R> {
        self.generate("mcp-load", args)
    }

    /// Runs `binary` of the `benches` package, pinned where the load generator goes, with
    /// `args` and `--json`, and reads its report.
    pub(crate) fn generate<R: DeserializeOwned>(
        &self,
        binary: &str,
        args: &[String],
    ) -> anyhow::Result<R> {
        let program = self.bin_dir.join(binary);
        let mut args = args.to_vec();
        args.push("--json".to_owned());
        let output = self
            .command(1, &program, &args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", program.display()))?;
        if !output.status.success() {
            bail!(
                "{binary} {} failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        serde_json::from_slice(&output.stdout).with_context(|| {
            format!(
                "{binary} printed something else than its report: {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }
}

/// A running server; stopped (killed) when dropped, with its other nodes and its proxy.
#[derive(Debug)]
pub(crate) struct Server {
    child: Child,
    /// Its (first node's) process id, for `/proc`.
    pub(crate) pid: u32,
    /// Every node's process id: the server's CPU is their sum.
    pub(crate) pids: Vec<u32>,
    /// Processes whose CPU is counted apart (the proxy), by name.
    pub(crate) side: Vec<(&'static str, u32)>,
    /// The MCP endpoint (the proxy's, for several nodes).
    pub(crate) url: String,
    /// The other nodes and the proxy.
    others: Vec<Server>,
    /// The OTLP sink it exports to (`ours-otlp`), stopped after it.
    sink: Option<Sink>,
}

impl Server {
    /// A server started by other means, listening at `url`.
    pub(crate) fn from_child(child: Child, url: String) -> Server {
        let pid = child.id();
        Server {
            child,
            pid,
            pids: vec![pid],
            side: Vec::new(),
            url,
            others: Vec::new(),
            sink: None,
        }
    }

    /// What its OTLP sink has received so far, if it exports to one.
    pub(crate) fn exported(&self) -> Option<Received> {
        self.sink.as_ref().map(Sink::received)
    }

    /// Its exit status, if it has exited.
    pub(crate) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// What `mcp-load --mode idle` is told to open `sessions` idle sessions on this server,
    /// each session's connection closed once it is initialized when `close`.
    pub(crate) fn idle_args(&self, sessions: usize, close: bool) -> Vec<String> {
        let mut args = vec![
            "--url".to_owned(),
            self.url.clone(),
            "--mode".to_owned(),
            "idle".to_owned(),
            "--sessions".to_owned(),
            sessions.to_string(),
            "--server-pid".to_owned(),
            self.pid.to_string(),
        ];
        if close {
            args.push("--close".to_owned());
        }
        args
    }

    /// What `mcp-load` is told of this server's processes: `--server-pid` for each node,
    /// `--side-pid NAME=PID` for the others.
    pub(crate) fn pid_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for pid in &self.pids {
            args.extend(["--server-pid".to_owned(), pid.to_string()]);
        }
        for (name, pid) in &self.side {
            args.extend(["--side-pid".to_owned(), format!("{name}={pid}")]);
        }
        args
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
