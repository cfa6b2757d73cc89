//! `--log-format`: what `echo_server` writes to a stderr that is not a terminal (a pipe, as a
//! log file or a collector is) has no colour codes, and in JSON each line is an object; lines
//! inside a session's span name the session.

use std::io::Read as _;
use std::process::Stdio;

use serde_json::{Value, json};

use super::{EchoServer, Http, Session};

/// Runs `echo_server` with these flags, a session through one call and a DELETE, then SIGTERM;
/// its stderr and the session's id.
async fn a_run_logged(flags: &[&str]) -> (String, String) {
    // The session's span is `debug`: its id shows from that level on.
    a_run_logged_at("info,mcp_streamable_server=debug", flags).await
}

/// [`a_run_logged`] with `RUST_LOG=rust_log`.
async fn a_run_logged_at(rust_log: &str, flags: &[&str]) -> (String, String) {
    let env = [("RUST_LOG", rust_log)];
    let mut server = EchoServer::start(flags, &env, Stdio::piped());
    let mut stderr = server.stderr();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        text
    });
    let http = Http::new();
    let session = Session::open(&http, &server).await;
    let id = session.id.clone();
    assert_eq!(session.echo(1, "logged", json!({})).await, "logged");
    session.delete().await;
    assert!(server.terminate().success());
    let text = reader.join().unwrap();
    assert!(
        !text.contains(&0x1b),
        "{flags:?}: an ESC byte (a colour code) in a log that is not a terminal"
    );
    (String::from_utf8(text).expect("UTF-8 logs"), id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_logs_to_a_pipe_have_no_colour_codes() {
    let (text, id) = a_run_logged(&["--log-format", "plain"]).await;
    assert!(
        text.lines().any(|l| l.contains("SIGTERM received")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.contains(&id)),
        "no line names {id}: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_a_line_and_name_the_session() {
    let (text, id) = a_run_logged(&["--log-format", "json"]).await;
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect();
    for line in &lines {
        assert!(
            line["level"].is_string() && line["fields"].is_object(),
            "{line}"
        );
    }
    let sigterm = lines
        .iter()
        .any(|l| l["fields"]["message"].as_str() == Some("SIGTERM received; shutting down"));
    assert!(sigterm, "{text}");
    let in_session = lines.iter().any(|l| {
        let spans = l["spans"].as_array().into_iter().flatten();
        spans
            .chain([&l["span"]])
            .any(|s| s["session_id"] == id.as_str())
    });
    assert!(in_session, "no line in the session {id}'s span: {text}");
}

#[tokio::test]
async fn an_unknown_log_format_is_refused_naming_the_choices() {
    let output = crate::faults::echo_server_command()
        .args(["--log-format", "xml"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("plain") && stderr.contains("json"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_log_names_each_requests_session_and_call() {
    let (text, id) = a_run_logged_at("info", &["--log-format", "json", "--request-log"]).await;
    let answered: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .filter(|l| l["fields"]["message"] == "request answered")
        .map(|l| l["fields"].clone())
        .collect();
    let of = |method: &str| {
        answered
            .iter()
            .find(|f| f["mcp_method"] == method)
            .unwrap_or_else(|| panic!("no line for {method}: {text}"))
    };
    // initialize's session is the one its answer gave.
    let initialize = of("initialize");
    assert_eq!(initialize["session_id"], id.as_str(), "{initialize}");
    assert_eq!(initialize["status"], 200, "{initialize}");
    let call = of("tools/call");
    assert_eq!(call["session_id"], id.as_str(), "{call}");
    assert_eq!(call["request_id"], "1", "{call}");
    assert_eq!(call["method"], "POST", "{call}");
    assert!(call["elapsed_us"].is_u64(), "{call}");
    assert_eq!(of("notifications/initialized")["status"], 202);
    let delete = answered
        .iter()
        .find(|f| f["method"] == "DELETE")
        .unwrap_or_else(|| panic!("no line for the DELETE: {text}"));
    assert_eq!(delete["session_id"], id.as_str(), "{delete}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_flag_no_request_is_logged() {
    let (text, _) = a_run_logged_at("info", &["--log-format", "json"]).await;
    assert!(!text.contains("request answered"), "{text}");
}
