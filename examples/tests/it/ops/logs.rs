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
    let env = [("RUST_LOG", "info,mcp_streamable_server=debug")];
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
