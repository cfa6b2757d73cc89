//! A browser without a user, for the conformance client and the tests: it GETs an
//! authorization URL and reads where the authorization server redirects (the test servers
//! approve at once), over plain HTTP/1.1 on loopback.

use anyhow::Context as _;
use mcp_streamable_http::oauth::{Interaction, InteractionFuture, Url};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most an answer may weigh: a redirect is a few hundred bytes.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// Where `url` redirects to: GETs it and returns its `Location`.
pub async fn redirect_of(url: &Url) -> anyhow::Result<Url> {
    let answer = get(url).await?;
    let location = answer
        .lines()
        .take_while(|line| !line.is_empty())
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("location").then(|| value.trim())
        })
        .with_context(|| {
            format!(
                "no redirect from {url}: {}",
                answer.lines().next().unwrap_or("")
            )
        })?;
    Ok(url.join(location)?)
}

/// GETs `url` and returns the whole answer, head and body.
pub async fn get(url: &Url) -> anyhow::Result<String> {
    anyhow::ensure!(url.scheme() == "http", "only plain http: {url}");
    let host = url.host_str().context("no host")?;
    let port = url.port_or_known_default().context("no port")?;
    let mut stream = tokio::net::TcpStream::connect((host, port)).await?;
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let request =
        format!("GET {target} HTTP/1.1\r\nhost: {host}:{port}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream
        .take(MAX_ANSWER_BYTES)
        .read_to_string(&mut answer)
        .await?;
    Ok(answer.replace("\r\n", "\n"))
}

/// An [`Interaction`] that approves at once: the redirect is read, never served.
#[derive(Debug)]
pub struct Headless {
    /// Where the authorization server sends the browser back: never listened on, since the
    /// redirect is read, not followed.
    pub redirect_uri: String,
}

impl Interaction for Headless {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn authorize(&self, url: Url) -> InteractionFuture<'_> {
        Box::pin(async move { redirect_of(&url).await.map_err(Into::into) })
    }
}
