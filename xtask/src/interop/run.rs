//! One pair's run: its authorization server or its Redis and nodes when it has them, its
//! server, its client to the end; then the verdict, and the evidence for a failure.

use std::fs;

use super::nodes;
use super::pairs::Pair;
use super::peers::{Peers, protected_flags};
use crate::peer::{self, Ended, Server};

/// Runs one pair; the error is the failure line and the evidence under it.
pub(super) fn run_pair(peers: &Peers, pair: &Pair) -> Result<(), String> {
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
    // A traced pair's receiver is the client's, on a port picked here that the server is told.
    let otlp_port = match pair.traced {
        true => Some(free_port().map_err(|e| details(format!("no free port: {e}")))?),
        false => None,
    };
    if let Some(port) = otlp_port {
        command
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            )
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
            // The batch exporter's wait before it sends: short, so the client need not wait.
            .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    }
    let mut server = Server::start(
        command,
        &file("server.out"),
        &file("server.err"),
        peer::SERVER_START_TIMEOUT,
    )
    .map_err(|error| details(format!("the server did not start: {error:#}")))?;
    let mut client = peers
        .client(pair, server.url())
        .map_err(|e| format!("{e:#}"))?;
    if let Some(port) = otlp_port {
        client.env("MCP_OTLP_PORT", port.to_string());
    }
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

/// A loopback port free now. The receiver that takes it starts a moment later: the server's
/// first export comes after the client's call, so only another process binding the port in
/// between could take it.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

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
