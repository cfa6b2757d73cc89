//! `--metrics`: a real Prometheus (Debian's, which `cargo xtask ci`'s services step installs)
//! scrapes `echo_server` on loopback; after N tool calls and the sessions' DELETEs, its HTTP
//! API finds the operation histogram's count at N and the live sessions back at 0.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{EchoServer, Http, Session};
use crate::faults::Scratch;

/// The sessions, and the calls each makes.
const SESSIONS: usize = 2;
const CALLS: usize = 3;

/// How often Prometheus scrapes the server.
const SCRAPE: &str = "250ms";

/// How often, and how many times at most, a query is asked again until it holds (30 s).
const POLL: Duration = Duration::from_millis(100);
const POLLS: u32 = 300;

/// A `prometheus` process, killed by its pid when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `prometheus` the services step of `cargo xtask ci` unpacks under `.tools/prometheus`,
/// else one on `PATH`; `None` (the test skips) only outside CI.
fn binary() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let unpacked = root.join(".tools/prometheus/usr/bin/prometheus");
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("prometheus"))
            .find(|p| p.is_file())
    });
    let found = Some(unpacked).filter(|p| p.is_file()).or(on_path);
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no prometheus: the services step of `cargo xtask ci` unpacks Debian's package"
        );
        eprintln!(
            "skipped: no prometheus in .tools/prometheus or on PATH (`cargo xtask ci` unpacks \
             Debian's package there; `apt-get install prometheus` puts one on PATH)"
        );
    }
    found
}

/// How long Prometheus may take to say where it listens.
const STARTUP: Duration = Duration::from_secs(30);

/// Starts Prometheus scraping `target` every [`SCRAPE`], its config and data in `dir`. It
/// listens on a port it picks itself and says which in its log: a port probed free beforehand
/// could be taken by another process before Prometheus binds it.
fn start(binary: &PathBuf, dir: &Scratch, target: SocketAddr) -> Prometheus {
    let config = format!(
        "global:\n  scrape_interval: {SCRAPE}\n  scrape_timeout: {SCRAPE}\n\
         scrape_configs:\n  - job_name: echo_server\n    static_configs:\n      \
         - targets: ['{target}']\n"
    );
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, config).unwrap();
    let mut child = Command::new(binary)
        .arg(format!("--config.file={}", config_path.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg("--web.listen-address=127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prometheus starts");
    // Its log is read to its end (so that it never blocks on a full pipe); the address it
    // names is sent on.
    let log = child.stderr.take().expect("stderr piped");
    let (said, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(log).lines().map_while(Result::ok) {
            if let Some(addr) = listening_on(&line) {
                let _ = said.send(addr);
            }
        }
    });
    match heard.recv_timeout(STARTUP) {
        Ok(addr) => Prometheus { child, addr },
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("prometheus did not say where it listens within {STARTUP:?}");
        }
    }
}

/// The address of Prometheus's log line `msg="Listening on" address=127.0.0.1:PORT`.
fn listening_on(line: &str) -> Option<SocketAddr> {
    if !line.contains(r#"msg="Listening on""#) {
        return None;
    }
    let (_, rest) = line.split_once(" address=")?;
    rest.split_whitespace().next()?.parse().ok()
}

#[test]
fn the_address_prometheus_listens_on_is_read_from_its_log() {
    let line = concat!(
        "ts=2026-11-28T16:32:59.165Z caller=tls_config.go:232 level=info component=web ",
        r#"msg="Listening on" address=127.0.0.1:43987"#
    );
    assert_eq!(listening_on(line), Some("127.0.0.1:43987".parse().unwrap()));
    // The line before it names the address asked for, port 0: not where it listens.
    let asked = concat!(
        "ts=2026-11-28T16:32:59.163Z caller=web.go:503 level=info component=web ",
        r#"msg="Start listening for connections" address=127.0.0.1:0"#
    );
    assert_eq!(listening_on(asked), None);
}

/// Asks `query` of Prometheus until `holds` accepts its value (a number, `None` while it has
/// no sample), at most [`POLLS`] times; the last value.
async fn until(
    http: &Http,
    prometheus: &Prometheus,
    query: &str,
    holds: impl Fn(Option<f64>) -> bool,
) -> Option<f64> {
    let url = format!(
        "http://{}/api/v1/query?query={}",
        prometheus.addr,
        encode(query)
    );
    let started = Instant::now();
    let mut last = None;
    for _ in 0..POLLS {
        // Prometheus may not listen yet: a refused connection is asked again.
        if let Some(answer) = http.try_get(&url).await {
            let answer: Value = serde_json::from_str(&answer).unwrap_or(Value::Null);
            last = answer["data"]["result"][0]["value"][1]
                .as_str()
                .and_then(|v| v.parse().ok());
            if holds(last) {
                return last;
            }
        }
        tokio::time::sleep(POLL).await;
    }
    panic!(
        "{query}: {last:?} after {:?}, not what was awaited",
        started.elapsed()
    );
}

/// Percent-encoding of a query: everything but letters and digits.
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o7_prometheus_scrapes_the_calls_and_the_sessions_back_to_zero() {
    let Some(binary) = binary() else { return };
    let dir = Scratch::new("prometheus");
    let server = EchoServer::start(&["--metrics", "127.0.0.1:0"], &[], Stdio::null());
    let prometheus = start(&binary, &dir, server.metrics.unwrap());
    let http = Http::new();
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(Session::open(&http, &server).await);
    }
    let mut id = 0;
    for session in &sessions {
        for _ in 0..CALLS {
            id += 1;
            let text = format!("call {id}");
            assert_eq!(session.echo(id, &text, json!({})).await, text);
        }
    }
    let live = "sum(mcp_server_session_active)";
    let want = SESSIONS as f64;
    until(&http, &prometheus, live, |v| v == Some(want)).await;
    for session in sessions {
        session.delete().await;
    }
    let calls = "sum(mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"})";
    let want = (SESSIONS * CALLS) as f64;
    until(&http, &prometheus, calls, |v| v == Some(want)).await;
    until(&http, &prometheus, live, |v| v == Some(0.0)).await;
    let deleted = "sum(mcp_server_session_ended_total{mcp_session_end_reason=\"deleted\"})";
    let want = SESSIONS as f64;
    until(&http, &prometheus, deleted, |v| v == Some(want)).await;
    // The histogram's buckets are the convention's: 14 bounds and +Inf.
    let buckets =
        "count(mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\"})";
    until(&http, &prometheus, buckets, |v| v == Some(15.0)).await;
}
