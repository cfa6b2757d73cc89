//! The child's stderr goes to the gateway's log, each line with its session's id.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use serde_json::json;

use crate::harness::*;

/// What the tests' subscriber wrote: the one subscriber of the test process.
static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing_subscriber::fmt()
            .with_writer(|| Capture)
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .init();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_childs_stderr_is_logged_with_its_session_id() {
    capture();
    let gateway = Running::child("normal").await;
    let (mut conn, _) = session(&gateway.url).await;
    let session_id = conn.session_id().expect("a session");
    let (response, _) = ask(
        &mut conn,
        tool(1, "stderr", json!({"text": "a line on stderr"})),
    )
    .await;
    assert_eq!(text(&response), "written");
    until(|| {
        let log = String::from_utf8_lossy(&LOG.lock().unwrap()).into_owned();
        log.lines()
            .any(|line| line.contains("child: a line on stderr") && line.contains(&session_id))
    })
    .await;
    gateway.shutdown().await;
}
