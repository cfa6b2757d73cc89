//! `serve --tls-cert FILE --tls-key FILE`: the gateway's binary terminating TLS, reached by our
//! client trusting the test's own certificate authority, in both families.

use std::process::Stdio;

use mcp_http_client::testing::Authority;
use mcp_streamable_client::{Client, Family};
use mcp_transport::Transport as _;
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::harness::*;

/// The gateway's process, killed with its process group when the test ends.
struct Gateway(tokio::process::Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id().and_then(|id| Pid::from_raw(id as i32)) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_terminates_tls_with_the_certificate_it_is_given() {
    let authority = Authority::new("gateway test authority");
    let leaf = authority.sign(&["127.0.0.1"], None);
    let dir = std::env::temp_dir().join(format!("mcp-gateway-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, &leaf.cert).unwrap();
    std::fs::write(&key, &leaf.key).unwrap();
    let mut process = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--pool-size",
            "1",
            "--tls-cert",
        ])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .args(["--", "python3", CHILD, "normal"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = process.stdout.take().unwrap();
    let _gateway = Gateway(process);
    let mut first = String::new();
    within(BufReader::new(stdout).read_line(&mut first))
        .await
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .expect("the first line")
        .to_owned();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    for family in [Family::Session, Family::PerRequest] {
        let client = Client::builder(&url)
            .family(family)
            .tls_config(authority.client_config())
            .request_timeout(LIMIT)
            .client_info("gateway-it", "0")
            .build()
            .unwrap();
        let mut conn = within(client.connect()).await.unwrap();
        if family == Family::Session {
            initialize(&mut conn).await;
        }
        assert!(child_pid(&mut conn, 1).await > 0, "{family:?}");
    }
    // A client that does not trust the authority is refused by the handshake.
    let stranger = Authority::new("stranger");
    let client = Client::builder(&url)
        .family(Family::PerRequest)
        .tls_config(stranger.client_config())
        .request_timeout(LIMIT)
        .build()
        .unwrap();
    let mut conn = within(client.connect()).await.unwrap();
    let refused = within(mcp_transport::Sender::send(
        &mcp_transport::Connection::sender(&conn),
        tool(1, "pid", serde_json::json!({})).into(),
    ))
    .await;
    assert!(
        refused.is_err(),
        "a client not trusting the certificate got through"
    );
    let _ = mcp_transport::Connection::close(&mut conn).await;
    let _ = std::fs::remove_dir_all(&dir);
}
