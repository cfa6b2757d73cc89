//! The HTTP client is the application's to give (`OAuthBuilder::http_client`): the provider's
//! requests go through it, and its answers are held to the provider's bounds.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use mcp_http_client::{Client, HttpClient, ResponseFuture};
use mcp_streamable_oauth::{ErrorKind, OAuth, Registration};

use crate::world::{self, Options, ask, refused};

/// Sends through `mcp-http-client`'s client, noting each request's method and path.
#[derive(Debug)]
struct Recording {
    inner: Client,
    seen: Mutex<Vec<String>>,
}

impl HttpClient for Recording {
    fn send(&self, request: Request<Bytes>) -> ResponseFuture<'_> {
        let line = format!("{} {}", request.method(), request.uri().path());
        self.seen.lock().unwrap().push(line);
        self.inner.send(request)
    }
}

/// Answers every request with a body of `len` bytes.
#[derive(Debug)]
struct Heavy(usize);

impl HttpClient for Heavy {
    fn send(&self, _: Request<Bytes>) -> ResponseFuture<'_> {
        let body = Bytes::from(vec![b' '; self.0]);
        Box::pin(async move { Ok(Response::new(body)) })
    }
}

fn machine(base: &str, client: impl HttpClient + 'static) -> OAuth {
    OAuth::builder(&format!("{base}/mcp"))
        .client_credentials()
        .preregistered(Registration::with_secret("machine", "s3cret"), None)
        .http_client(client)
        .build()
        .unwrap()
}

fn challenge(base: &str) -> String {
    format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#)
}

#[tokio::test]
async fn the_requests_go_through_the_client_given() {
    let server = world::start(Options::default()).await;
    let recording = Arc::new(Recording {
        inner: Client::builder().https(false).build().unwrap(),
        seen: Mutex::default(),
    });
    let oauth = machine(&server.url, recording.clone());
    let token = ask(&oauth, refused(401, None, &challenge(&server.url))).await;
    assert_eq!(token.unwrap().as_deref(), Some("Bearer at-1"));
    assert_eq!(
        *recording.seen.lock().unwrap(),
        [
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-authorization-server",
            "POST /token"
        ]
    );
}

#[tokio::test]
async fn an_answer_over_the_bound_is_refused_whatever_the_client() {
    let oauth = machine("https://mcp.example.com", Heavy(256 * 1024 + 1));
    let error = ask(
        &oauth,
        refused(401, None, &challenge("https://mcp.example.com")),
    )
    .await
    .unwrap_err()
    .downcast::<mcp_streamable_oauth::Error>()
    .unwrap();
    assert_eq!(error.kind(), ErrorKind::Http);
    let source = std::error::Error::source(&*error).unwrap().to_string();
    assert_eq!(source, "http body larger than 262144 bytes");
}
