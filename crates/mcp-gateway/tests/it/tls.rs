//! `serve --tls-cert FILE --tls-key FILE`: the gateway's binary terminating TLS, reached by our
//! client trusting the test's own certificate authority, in both families.

use std::ffi::OsStr;

use mcp_http_client::testing::Authority;
use mcp_streamable_client::{Client, Family};
use mcp_transport::Transport as _;

use crate::binary::Binary;
use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_terminates_tls_with_the_certificate_it_is_given() {
    let authority = Authority::new("gateway test authority");
    let leaf = authority.sign(&["127.0.0.1"], None);
    let dir = std::env::temp_dir().join(format!("mcp-gateway-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, &leaf.cert).unwrap();
    std::fs::write(&key, &leaf.key).unwrap();
    let tls = [
        OsStr::new("--tls-cert"),
        cert.as_os_str(),
        OsStr::new("--tls-key"),
        key.as_os_str(),
    ];
    let args = [
        OsStr::new("--addr"),
        OsStr::new("127.0.0.1:0"),
        OsStr::new("--pool-size"),
        OsStr::new("1"),
    ];
    let gateway = Binary::serve(args.into_iter().chain(tls)).await;
    let url = gateway.url.clone();
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
