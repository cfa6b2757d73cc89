//! The example servers' command lines, run as processes: `echo_server`'s `Host` allow list and
//! flags set through the environment. Loopback only, ports the OS picks; every process is
//! killed by its pid when its test ends, however it ends.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::faults::echo_server_command;

/// How long the server may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long one exchange may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// An `echo_server` process, killed (by its pid) when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    /// Starts `command` (the echo server with its flags and environment) on a port the OS
    /// picks, and waits for its address.
    fn start(mut command: Command) -> Server {
        let mut child = command
            .args(["--addr", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("echo_server starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            // Keeps reading, so that the server never blocks on a full pipe.
            for _ in lines {}
        });
        let line = rx.recv_timeout(START_TIMEOUT);
        let addr = line
            .as_deref()
            .ok()
            .and_then(|line| line.strip_prefix("listening on http://"))
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|addr| addr.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("echo_server printed no address in {START_TIMEOUT:?}: {line:?}");
        };
        Server { child, addr }
    }

    /// The status of a GET of `path`.
    fn get(&self, path: &str) -> u16 {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(EXCHANGE_TIMEOUT)).unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
            .split_whitespace()
            .nth(1)
            .and_then(|status| status.parse().ok())
            .unwrap_or(0)
    }

    /// POSTs an `initialize` with `Host: host`; the status and the `Content-Type` of the answer.
    fn initialize(&self, host: &str) -> (u16, String) {
        let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli","version":"0"}}}"#;
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(EXCHANGE_TIMEOUT)).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        // The head is all the test reads: an SSE answer's body may stay open a while.
        let mut head = Vec::new();
        let mut byte = [0; 1];
        while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
            match stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => break,
            }
        }
        let head = String::from_utf8_lossy(&head).to_lowercase();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status in {head:?}"));
        let content_type = head
            .lines()
            .find_map(|line| line.strip_prefix("content-type:"))
            .map(|value| value.trim().to_owned())
            .unwrap_or_default();
        (status, content_type)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn allowed_host_is_served_and_another_host_is_refused() {
    let mut command = echo_server_command();
    command.args(["--allowed-host", "mcp.example.com"]);
    let server = Server::start(command);
    assert_eq!(server.initialize("mcp.example.com").0, 200);
    assert_eq!(server.initialize("mcp.example.com:8443").0, 200);
    assert_eq!(
        server.initialize("127.0.0.1").0,
        200,
        "loopback stays allowed"
    );
    assert_eq!(server.initialize("evil.example.com").0, 403);
}

#[test]
fn without_allowed_host_only_loopback_names_are_served() {
    let server = Server::start(echo_server_command());
    assert_eq!(server.initialize("localhost").0, 200);
    assert_eq!(server.initialize("mcp.example.com").0, 403);
}

#[test]
fn flags_are_read_from_the_environment() {
    let mut command = echo_server_command();
    command
        .env("MCP_ALLOWED_HOST", "mcp.example.com,other.example.com")
        .env("MCP_JSON_RESPONSE", "true");
    let server = Server::start(command);
    let (status, content_type) = server.initialize("other.example.com");
    assert_eq!(status, 200);
    assert_eq!(content_type, "application/json", "MCP_JSON_RESPONSE");
    assert_eq!(server.initialize("evil.example.com").0, 403);
}

#[test]
fn a_flag_on_the_command_line_wins_over_its_variable() {
    let mut command = echo_server_command();
    command.env("MCP_JSON_RESPONSE", "false");
    command.arg("--json-response");
    let server = Server::start(command);
    assert_eq!(server.initialize("127.0.0.1").1, "application/json");
}

/// Runs the echo server with `args` and `env`, which it must refuse: its exit status and what
/// it wrote on stderr. One that serves instead is killed after [`START_TIMEOUT`].
fn refused(args: &[&str], env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let mut child = echo_server_command()
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("echo_server starts");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = std::time::Instant::now() + START_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("echo_server {args:?} {env:?} did not exit: it took what it should refuse");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, reader.join().unwrap())
}

#[test]
fn bad_values_are_refused_with_a_message() {
    for (args, env, names) in [
        (&["--addr", "nowhere"][..], &[][..], "--addr"),
        (
            &["--addr", "127.0.0.1:0", "--idle-timeout", "0"][..],
            &[][..],
            "--idle-timeout",
        ),
        (
            &["--addr", "127.0.0.1:0", "--unknown"][..],
            &[][..],
            "--unknown",
        ),
        (
            &["--addr", "127.0.0.1:0", "--node", "a"][..],
            &[][..],
            "--redis",
        ),
        (
            &["--addr", "127.0.0.1:0", "--stateless"][..],
            &[("MCP_REDIS", "redis://127.0.0.1:1/")][..],
            "--redis",
        ),
        (
            &["--addr", "127.0.0.1:0"][..],
            &[("MCP_JSON_RESPONSE", "maybe")][..],
            "--json-response",
        ),
    ] {
        let (status, stderr) = refused(args, env);
        assert!(!status.success(), "{args:?} {env:?} was accepted");
        assert!(
            stderr.contains(names),
            "{args:?} {env:?}: the message does not name {names}: {stderr}"
        );
    }
}

#[test]
fn sigterm_stops_the_server_as_ctrl_c_does_and_the_probes_answer() {
    let mut server = Server::start(echo_server_command());
    assert_eq!(server.get("/livez"), 200);
    assert_eq!(server.get("/readyz"), 200);
    assert_eq!(server.initialize("localhost").0, 200);
    // What systemd, docker and Kubernetes send; by the pid, as every signal of these tests.
    let pid = server.child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(sent.success());
    let mut status = None;
    for _ in 0..200 {
        status = server.child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // A graceful stop returns from main; SIGTERM unhandled would end it by the signal.
    let status = status.expect("the server stops within 10 s of SIGTERM");
    assert!(status.success(), "{status:?}");
}
