//! `cargo xtask interop`: our server and our client against the official TypeScript SDK (v1
//! and v2) and Python SDK (2.x and 1.x). Each pair is a real server process and a real client process:
//! the server prints its address, the client script runs one scenario against it and prints
//! `ok: ...` or `FAIL (step): reason`. `interop/README.md` says what each scenario checks.

use std::{fmt, fs, path::PathBuf, process::Command, time::Instant};

use anyhow::{Result, bail};

use crate::UsageError;
use crate::cmd::{build_example, target_dir};
use crate::nodes;
use crate::peer::{self, Ended, Server};
use crate::select::Selection;
use crate::tools;

/// One side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// This repository: `examples/echo_server.rs` as a server, `examples/interop_client.rs` as
    /// a client.
    Ours,
    /// The TypeScript SDK v1 (`@modelcontextprotocol/sdk`): `interop/ts/client.mjs`,
    /// `interop/ts/server.mjs`.
    Ts,
    /// The TypeScript SDK v2 (`@modelcontextprotocol/client` and `server`), the first to speak
    /// 2026-07-28: `interop/ts2/client.mjs`, `interop/ts2/server.mjs`.
    Ts2,
    /// The Python SDK 2.x: `interop/py/client.py`, `interop/py/server.py`.
    Py,
    /// The Python SDK's 1.x line: `interop/py1/client.py`.
    Py1,
}

use Peer::{Ours, Py, Py1, Ts, Ts2};

/// A client against a server, running one scenario.
#[derive(Debug)]
struct Pair {
    client: Peer,
    server: Peer,
    /// The server's flags: echo_server's `--json-response` or `--stateless`, server.mjs's
    /// `--event-store`...
    flags: &'static [&'static str],
    /// The client's scenario argument.
    scenario: &'static str,
    /// Whether the server is protected: `interop/ts/auth_server.mjs` runs beside it as its
    /// authorization server, and echo_server gets the `--auth-*` flags naming it.
    protected: bool,
    /// Whether the server is two echo_server nodes sharing a Redis (`nodes.rs`): the client is
    /// told both URLs and the first node's process id.
    nodes: bool,
}

const fn pair(
    client: Peer,
    server: Peer,
    flags: &'static [&'static str],
    scenario: &'static str,
) -> Pair {
    Pair {
        client,
        server,
        flags,
        scenario,
        protected: false,
        nodes: false,
    }
}

/// `client` against two echo_server nodes sharing a Redis, in `scenario`.
const fn nodes(client: Peer, scenario: &'static str) -> Pair {
    Pair {
        nodes: true,
        ..pair(client, Ours, &[], scenario)
    }
}

/// `client` against our echo server protected by `interop/ts/auth_server.mjs`, in `scenario`.
const fn protected(client: Peer, scenario: &'static str) -> Pair {
    Pair {
        protected: true,
        ..pair(client, Ours, &[], scenario)
    }
}

/// The scope the protected echo server requires.
const PROTECTED_SCOPE: &str = "mcp";

/// The pairs, in the order they run. A pair is one line: our client against the TypeScript
/// server will be `pair(Ours, Ts, &["--event-store"], "full")`, once `Peers::client` knows how
/// to start our client.
const PAIRS: &[Pair] = &[
    pair(Ts, Ours, &[], "full"),
    pair(Py, Ours, &[], "full"),
    pair(Ts, Ours, &[], "resume"),
    pair(Ts, Ours, &["--json-response"], "json"),
    pair(Py, Ours, &["--json-response"], "json"),
    pair(Ts, Ours, &["--stateless"], "stateless"),
    pair(Py, Ours, &["--stateless"], "stateless"),
    // The per-request protocol (2026-07-28) on the same endpoint: the version pinned, then the
    // SDK's discovery probe.
    pair(Py, Ours, &[], "modern"),
    pair(Py, Ours, &[], "auto"),
    pair(Ts2, Ours, &[], "modern"),
    pair(Ts2, Ours, &[], "auto"),
    // The Python SDK's 1.x line, which many deployed clients still run (logging/setLevel first).
    pair(Py1, Ours, &[], "full"),
    // Our client (`examples/interop_client.rs`) against the SDK servers.
    pair(Ours, Ts, &["--event-store"], "full"),
    pair(Ours, Py, &[], "full"),
    pair(Ours, Ts, &["--event-store"], "resume"),
    pair(Ours, Ts, &["--json-response"], "json"),
    pair(Ours, Py, &["--json-response"], "json"),
    pair(Ours, Ts, &["--stateless"], "stateless"),
    pair(Ours, Py, &["--stateless"], "stateless"),
    // The TypeScript SDK v2's server, in both eras: 2025-era requests served statelessly (its
    // default), and 2026-07-28.
    pair(Ours, Ts2, &[], "full"),
    pair(Ours, Ts2, &[], "modern"),
    // Authorization: the SDK's OAuth client against our protected server, with a minimal
    // authorization server of the test's.
    protected(Ts, "oauth"),
    // Several nodes (issue 15): the SDK's client resumes through node b a stream whose holder,
    // node a, was killed mid-stream.
    nodes(Ts, "failover"),
];

impl fmt::Display for Pair {
    /// `ts-client -> echo_server --json-response (json)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let client = match self.client {
            Ours => "our-client",
            Ts => "ts-client",
            Ts2 => "ts2-client",
            Py => "py-client",
            Py1 => "py1-client",
        };
        let server = match self.server {
            Ours => "echo_server",
            Ts => "ts-server",
            Ts2 => "ts2-server",
            Py => "py-server",
            Py1 => "py1-server",
        };
        write!(f, "{client} -> {server}")?;
        for flag in self.flags {
            write!(f, " {flag}")?;
        }
        if self.protected {
            write!(f, " --auth-*")?;
        }
        if self.nodes {
            write!(f, " x2 --redis")?;
        }
        write!(f, " ({})", self.scenario)
    }
}

impl Pair {
    /// The pair's directory name for its logs: `ts-client-echo_server-json-response-json`.
    fn slug(&self) -> String {
        let name = self.to_string();
        let words: Vec<&str> = name
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| !word.is_empty())
            .collect();
        words.join("-")
    }
}

/// The options of `cargo xtask interop`: `[--list] [FILTER]...` over the pair names
/// (`py-client`, `json`).
pub(crate) type Options = Selection;

/// Parses the arguments of `cargo xtask interop`; a filter must match some pair.
pub(crate) fn parse(args: &[String]) -> Result<Options, UsageError> {
    let options = Selection::parse(args, "interop")?;
    if !options.filters.is_empty() && selected(&options).is_empty() {
        let filters = options.filters.join("', '");
        return Err(UsageError {
            message: format!(
                "no interop pair matches '{filters}' (see `cargo xtask interop --list`)"
            ),
            show_usage: false,
        });
    }
    Ok(options)
}

/// The pairs `options` selects, in the order they run.
fn selected(options: &Options) -> Vec<&'static Pair> {
    PAIRS
        .iter()
        .filter(|pair| options.selects(&pair.to_string()))
        .collect()
}

pub(crate) fn run(options: &Options) -> Result<()> {
    let pairs = selected(options);
    if options.list {
        for pair in pairs {
            println!("{pair}");
        }
        return Ok(());
    }
    eprintln!("xtask: interop with {}", tools::sdk_versions());
    let peers = Peers::prepare(&pairs)?;
    let (mut passed, mut failed) = (0, 0);
    for pair in pairs {
        let start = Instant::now();
        match run_pair(&peers, pair) {
            Ok(()) => {
                passed += 1;
                let elapsed = start.elapsed().as_secs_f64();
                println!("interop: PASS {pair} in {elapsed:.1}s");
            }
            Err(failure) => {
                failed += 1;
                println!("interop: FAIL {pair}: {failure}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        bail!(
            "{failed} interop pair(s) failed; logs in {}",
            peers.logs.display()
        );
    }
    Ok(())
}

/// What the selected pairs need, installed and built once.
#[derive(Debug)]
struct Peers {
    node: Option<tools::Node>,
    node_v2: Option<tools::Node>,
    python: Option<tools::Python>,
    python_v1: Option<tools::Python>,
    echo_server: Option<PathBuf>,
    interop_client: Option<PathBuf>,
    /// `target/interop`: one directory of logs per pair.
    logs: PathBuf,
}

impl Peers {
    fn prepare(pairs: &[&Pair]) -> Result<Peers> {
        let uses = |peer: Peer| {
            pairs
                .iter()
                .any(|p| p.client == peer || p.server == peer || (p.protected && peer == Ts))
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
        Ok(Peers {
            node,
            node_v2,
            python,
            python_v1,
            echo_server,
            interop_client,
            logs: target_dir()?.join("interop"),
        })
    }

    fn server(&self, pair: &Pair) -> Result<Command> {
        let mut command = match pair.server {
            Ours => {
                let mut command = Command::new(self.echo_server.as_ref().expect("built"));
                command.args(["--addr", "127.0.0.1:0"]);
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
            Py1 => bail!("the Python SDK 1.x peer is a client only"),
        };
        command.args(pair.flags);
        Ok(command)
    }

    fn client(&self, pair: &Pair, url: &str) -> Result<Command> {
        let mut command = match pair.client {
            Ours => Command::new(self.interop_client.as_ref().expect("built")),
            Ts => self.node.as_ref().expect("installed").script("client.mjs"),
            Ts2 => self
                .node_v2
                .as_ref()
                .expect("installed")
                .script("client.mjs"),
            Py => self.python.as_ref().expect("installed").script("client.py"),
            Py1 => self
                .python_v1
                .as_ref()
                .expect("installed")
                .script("client.py"),
        };
        command.args([url, pair.scenario]);
        Ok(command)
    }
}

/// Runs one pair; the error is the failure line and the evidence under it.
fn run_pair(peers: &Peers, pair: &Pair) -> Result<(), String> {
    let dir = peers.logs.join(pair.slug());
    fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let file = |name: &str| dir.join(name);
    let details = |reason: String| {
        let mut report = reason;
        for log in ["client.err", "server.err"] {
            let tail = peer::tail(&file(log), 15);
            if !tail.is_empty() {
                report.push_str(&format!("\n    {log}, last lines:"));
                for line in tail {
                    report.push_str(&format!("\n      {line}"));
                }
            }
        }
        report.push_str(&format!("\n    logs: {}", dir.display()));
        report
    };
    if pair.nodes {
        return run_nodes(peers, pair, &dir).map_err(details);
    }
    // A protected pair's authorization server first: the echo server is told its address.
    let authorization = match pair.protected {
        true => Some(
            Server::start(
                peers
                    .node
                    .as_ref()
                    .expect("installed")
                    .script("auth_server.mjs"),
                &file("auth.out"),
                &file("auth.err"),
                peer::SERVER_START_TIMEOUT,
            )
            .map_err(|error| {
                details(format!("the authorization server did not start: {error:#}"))
            })?,
        ),
        false => None,
    };
    let mut command = peers.server(pair).map_err(|e| format!("{e:#}"))?;
    if let Some(issuer) = authorization.as_ref().map(Server::url) {
        command.args(protected_flags(issuer).map_err(|e| format!("{e:#}"))?);
    }
    let mut server = Server::start(
        command,
        &file("server.out"),
        &file("server.err"),
        peer::SERVER_START_TIMEOUT,
    )
    .map_err(|error| details(format!("the server did not start: {error:#}")))?;
    let client = peers
        .client(pair, server.url())
        .map_err(|e| format!("{e:#}"))?;
    let (ended, stdout) = peer::run_client(
        client,
        &file("client.out"),
        &file("client.err"),
        peer::CLIENT_TIMEOUT,
    )
    .map_err(|error| details(format!("{error:#}")))?;
    let server_exit = server.exited();
    drop(server);
    drop(authorization);
    judge(
        &ended,
        &stdout,
        server_exit.map(|s| s.to_string()),
        &file("server.err"),
    )
    .map_err(details)
}

/// A pair of several nodes: a Redis of its own, nodes `a` and `b`, and the client told
/// `URL_A SCENARIO URL_B PID_A`. Node `a` is meant to die; node `b` must live through it.
fn run_nodes(peers: &Peers, pair: &Pair, dir: &std::path::Path) -> Result<(), String> {
    crate::redis::ensure().map_err(|e| format!("{e:#}"))?;
    let redis = nodes::Redis::start(dir).map_err(|e| format!("{e:#}"))?;
    let command = || peers.server(pair).expect("echo_server is built");
    let (a, mut b) = nodes::start_nodes(&redis, command, dir).map_err(|e| format!("{e:#}"))?;
    let mut client = peers.client(pair, a.url()).map_err(|e| format!("{e:#}"))?;
    client.args([b.url().to_owned(), a.pid().to_string()]);
    let (ended, stdout) = peer::run_client(
        client,
        &dir.join("client.out"),
        &dir.join("client.err"),
        peer::CLIENT_TIMEOUT,
    )
    .map_err(|error| format!("{error:#}"))?;
    let b_exit = b.exited();
    drop((a, b, redis));
    judge(
        &ended,
        &stdout,
        b_exit.map(|s| s.to_string()),
        &dir.join("server-b.err"),
    )
}

/// echo_server's flags for a protected pair whose authorization server is at `issuer`. The
/// audience is the endpoint's URL, so the port is picked here, by binding port 0 and letting it
/// go; another process taking it in between makes the pair fail to start, not pass.
fn protected_flags(issuer: &str) -> Result<Vec<String>> {
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

/// Whether the client passed, and the server lived through it without a panic.
fn judge(
    ended: &Ended,
    stdout: &str,
    server_exit: Option<String>,
    server_err: &std::path::Path,
) -> Result<(), String> {
    let lines: Vec<&str> = stdout.lines().collect();
    let ok = lines.iter().any(|line| line.starts_with("ok: "));
    match ended {
        Ended::TimedOut => {
            let secs = peer::CLIENT_TIMEOUT.as_secs();
            return Err(format!(
                "the client was still running after {secs} s, so it was killed"
            ));
        }
        Ended::Exited(status) if !status.success() || !ok => {
            let reason = lines
                .iter()
                .position(|line| line.starts_with("FAIL"))
                .map(|at| lines[at..].join("\n    "))
                .unwrap_or_else(|| format!("the client exited ({status}) without a verdict"));
            return Err(reason);
        }
        Ended::Exited(_) => {}
    }
    if let Some(status) = server_exit {
        return Err(format!("the server exited ({status}) during the run"));
    }
    let log = fs::read_to_string(server_err).unwrap_or_default();
    if let Some(line) = log.lines().find(|line| line.contains("panicked at")) {
        return Err(format!("the server panicked: {line}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn pairs_are_named_for_the_log() {
        let names: Vec<String> = PAIRS.iter().map(ToString::to_string).collect();
        assert_eq!(names[0], "ts-client -> echo_server (full)");
        assert!(names.contains(&"py-client -> echo_server --json-response (json)".to_string()));
        assert!(names.contains(&"py-client -> echo_server (modern)".to_string()));
        assert!(names.contains(&"py-client -> echo_server (auto)".to_string()));
        assert!(names.contains(&"ts2-client -> echo_server (auto)".to_string()));
        assert!(names.contains(&"our-client -> ts2-server (modern)".to_string()));
        assert!(names.contains(&"py1-client -> echo_server (full)".to_string()));
        for (i, name) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(name), "{name} twice");
        }
        // interop/py1 has a client only.
        assert!(PAIRS.iter().all(|pair| pair.server != Py1));
        assert_eq!(
            pair(Ours, Ts, &["--event-store"], "full").to_string(),
            "our-client -> ts-server --event-store (full)"
        );
        assert_eq!(PAIRS[3].slug(), "ts-client-echo_server-json-response-json");
        let oauth = "ts-client -> echo_server --auth-* (oauth)";
        assert!(names.contains(&oauth.to_string()));
        assert_eq!(
            protected(Ts, "oauth").slug(),
            "ts-client-echo_server-auth-oauth"
        );
    }

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

    /// A scenario the client script does not know would fail only when the pair runs.
    #[test]
    fn every_scenario_is_one_its_client_knows() {
        let root = crate::project_root();
        for pair in PAIRS {
            let script = match pair.client {
                Ours => "examples/interop_client.rs",
                Ts => "interop/ts/client.mjs",
                Ts2 => "interop/ts2/client.mjs",
                Py => "interop/py/client.py",
                Py1 => "interop/py1/client.py",
            };
            let text = fs::read_to_string(root.join(script)).unwrap();
            let quoted = [
                format!("'{}'", pair.scenario),
                format!("\"{}\"", pair.scenario),
            ];
            assert!(
                quoted.iter().any(|q| text.contains(q.as_str())),
                "{script} has no scenario {}",
                pair.scenario
            );
        }
    }

    #[test]
    fn filters_select_pairs_and_must_match_one() {
        let options = parse(&args("py-client stateless")).unwrap();
        let names: Vec<String> = selected(&options).iter().map(|p| p.to_string()).collect();
        assert_eq!(names.len(), 8, "{names:?}");
        assert!(
            names
                .iter()
                .all(|n| n.contains("py-client") || n.contains("stateless"))
        );
        assert_eq!(selected(&parse(&[]).unwrap()).len(), PAIRS.len());
        assert!(parse(&args("--list")).unwrap().list);
        let error = parse(&args("rust-client")).unwrap_err();
        assert_eq!(
            error.message,
            "no interop pair matches 'rust-client' (see `cargo xtask interop --list`)"
        );
        assert!(parse(&args("--fast")).unwrap_err().show_usage);
    }

    #[test]
    fn the_verdict_needs_ok_a_clean_exit_and_a_live_server() {
        let dir = std::env::temp_dir().join(format!("xtask-judge-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let log = dir.join("server.err");
        fs::write(&log, "").unwrap();
        let status = |code: i32| {
            let ended = Command::new("sh")
                .args(["-c", &format!("exit {code}")])
                .status();
            Ended::Exited(ended.unwrap())
        };
        assert_eq!(
            judge(&status(0), "ok: ts-client full\n", None, &log),
            Ok(())
        );
        assert_eq!(
            judge(
                &status(1),
                "FAIL (echo): echo answered {}\n  wire: POST\n",
                None,
                &log
            ),
            Err("FAIL (echo): echo answered {}\n      wire: POST".into())
        );
        assert_eq!(
            judge(&status(0), "", None, &log),
            Err("the client exited (exit status: 0) without a verdict".into())
        );
        assert!(
            judge(&Ended::TimedOut, "", None, &log)
                .unwrap_err()
                .contains("killed")
        );
        let gone = judge(&status(0), "ok: x\n", Some("signal: 9".into()), &log);
        assert_eq!(
            gone,
            Err("the server exited (signal: 9) during the run".into())
        );
        fs::write(
            &log,
            "thread 'tokio-runtime-worker' panicked at src/x.rs:1:1:\n",
        )
        .unwrap();
        assert!(
            judge(&status(0), "ok: x\n", None, &log)
                .unwrap_err()
                .contains("panicked")
        );
        fs::remove_dir_all(dir).unwrap();
    }
}
