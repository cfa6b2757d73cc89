//! What an rmcp user reads when the transport fails.

use mcp_transport::Transport;
use rmcp::ServiceExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The body of the refusal, which the user must see.
const REFUSAL: &str = "invalid bearer token";

/// A loopback HTTP server that answers every request `401 Unauthorized` with [`REFUSAL`],
/// for at most `requests` requests; its URL.
async fn refusing_server(requests: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..requests {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            // The request's head and body are small; one read of up to 64 KiB holds the head,
            // and the answer closes the connection, so nothing is left to read.
            let mut buf = vec![0; 64 * 1024];
            let _ = tcp.read(&mut buf).await;
            let answer = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\n\
                 www-authenticate: Bearer\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{REFUSAL}",
                REFUSAL.len()
            );
            let _ = tcp.write_all(answer.as_bytes()).await;
            let _ = tcp.shutdown().await;
        }
    });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn an_rmcp_client_refused_with_401_reads_the_status_and_the_body() {
    let url = refusing_server(4).await;
    let connection = mcp_streamable_client::Client::builder(&url)
        .build()
        .unwrap()
        .connect()
        .await
        .unwrap();
    let error = ().serve(mcp_rmcp::client(connection)).await.unwrap_err();
    // rmcp prints only the `Display` of the transport's error: the cause must be in it.
    let message = error.to_string();
    assert!(message.contains("401"), "{message}");
    assert!(message.contains(REFUSAL), "{message}");
}
