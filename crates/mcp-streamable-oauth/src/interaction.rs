//! The browser step of the authorization-code grant: a user (or a test) visits the
//! authorization URL, and the server redirects back with a code. [`LoopbackRedirect`] receives
//! that redirect on a free port of 127.0.0.1, for command-line programs (RFC 8252, section 7.3).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;
use url::Url;

use crate::error::BoxError;

/// The future an [`Interaction`] returns: the URL the server redirected to.
pub type InteractionFuture<'a> = Pin<Box<dyn Future<Output = Result<Url, BoxError>> + Send + 'a>>;

/// How long [`LoopbackRedirect`] waits for the redirect by default: a user has to log in.
pub const DEFAULT_REDIRECT_TIMEOUT: Duration = Duration::from_secs(300);
/// The most a redirect request's head may weigh.
const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// The most connections a loopback redirect takes that are not the redirect (a favicon, a
/// port scan) before it gives up.
const MAX_STRAY_CONNECTIONS: usize = 32;
/// How long a connection to the loopback port may take to send its request head.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The user's part of the authorization-code grant.
pub trait Interaction: Send + Sync + 'static {
    /// The redirect URI the authorization server sends the user back to.
    fn redirect_uri(&self) -> &str;
    /// Shows the user `authorization_url` and returns the URL the server redirected to, with
    /// its `code`, `state` and `iss` (or `error`).
    fn authorize(&self, authorization_url: Url) -> InteractionFuture<'_>;
}

type Open = Box<dyn Fn(&Url) + Send + Sync>;

/// An [`Interaction`] for command-line programs: listens on a free port of 127.0.0.1 (never a
/// fixed one, so two programs never clash) and hands the authorization URL to a callback that
/// opens a browser or prints it.
///
/// ```no_run
/// # async fn f() -> std::io::Result<()> {
/// use mcp_streamable_oauth::LoopbackRedirect;
///
/// let redirect = LoopbackRedirect::bind(|url| eprintln!("open {url} to authorize")).await?;
/// assert!(redirect.redirect_uri().starts_with("http://127.0.0.1:"));
/// # Ok(()) }
/// # use mcp_streamable_oauth::Interaction;
/// ```
pub struct LoopbackRedirect {
    listener: Mutex<TcpListener>,
    redirect_uri: String,
    open: Open,
    timeout: Duration,
}

impl LoopbackRedirect {
    /// Binds 127.0.0.1 on a port the system picks; `open` is given each authorization URL.
    pub async fn bind(open: impl Fn(&Url) + Send + Sync + 'static) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackRedirect {
            listener: Mutex::new(listener),
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
            open: Box::new(open),
            timeout: DEFAULT_REDIRECT_TIMEOUT,
        })
    }

    /// How long to wait for the redirect ([`DEFAULT_REDIRECT_TIMEOUT`] by default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn wait(&self) -> Result<Url, BoxError> {
        let listener = self.listener.lock().await;
        for _ in 0..MAX_STRAY_CONNECTIONS {
            let (stream, _) = listener.accept().await?;
            match tokio::time::timeout(REQUEST_TIMEOUT, self.answer(stream)).await {
                Ok(Ok(Some(url))) => return Ok(url),
                Ok(Ok(None)) => continue,
                Ok(Err(e)) => tracing::debug!(error = %e, "bad request on the redirect port"),
                Err(_) => tracing::debug!("slow request on the redirect port"),
            }
        }
        Err("too many stray connections on the redirect port".into())
    }

    /// Reads one request; answers it, and returns its URL if it is the redirect.
    async fn answer(&self, mut stream: TcpStream) -> Result<Option<Url>, BoxError> {
        let head = read_head(&mut stream).await?;
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .ok_or("not a GET")?;
        let base = Url::parse(&self.redirect_uri)?;
        let url = base.join(target)?;
        if url.path() != base.path() {
            stream.write_all(PAGE_NOT_FOUND).await?;
            return Ok(None);
        }
        stream.write_all(PAGE_DONE).await?;
        stream.shutdown().await.ok();
        Ok(Some(url))
    }
}

const PAGE_DONE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\nconnection: close\r\ncontent-length: 59\r\n\r\n<p>Authorization finished: you may close this window.</p>\r\n";
const PAGE_NOT_FOUND: &[u8] =
    b"HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

async fn read_head(stream: &mut TcpStream) -> Result<String, BoxError> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_REQUEST_BYTES {
            return Err("request head too large".into());
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err("connection closed before the request head ended".into());
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8(head)?)
}

impl Interaction for LoopbackRedirect {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn authorize(&self, authorization_url: Url) -> InteractionFuture<'_> {
        Box::pin(async move {
            (self.open)(&authorization_url);
            tokio::time::timeout(self.timeout, self.wait())
                .await
                .map_err(|_| "no redirect came back in time")?
        })
    }
}

impl fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(uri: &str, path: &str) -> String {
        let authority = Url::parse(uri).unwrap();
        let addr = format!("127.0.0.1:{}", authority.port().unwrap());
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn the_redirect_is_caught_on_a_free_port_and_strays_are_refused() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let redirect = LoopbackRedirect::bind(move |url| tx.send(url.clone()).unwrap())
            .await
            .unwrap();
        let other = LoopbackRedirect::bind(|_| {}).await.unwrap();
        assert_ne!(redirect.redirect_uri(), other.redirect_uri());
        let uri = redirect.redirect_uri().to_owned();
        let browser = tokio::spawn(async move {
            let opened = rx.recv().await.unwrap();
            assert_eq!(opened.as_str(), "https://as.example/authorize?x=1");
            assert!(get(&uri, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
            get(&uri, "/callback?code=abc&state=s").await
        });
        let url = Url::parse("https://as.example/authorize?x=1").unwrap();
        let back = redirect.authorize(url).await.unwrap();
        assert_eq!(back.query(), Some("code=abc&state=s"));
        assert!(browser.await.unwrap().starts_with("HTTP/1.1 200"));
    }

    #[tokio::test(start_paused = true)]
    async fn no_redirect_times_out() {
        let redirect = LoopbackRedirect::bind(|_| {})
            .await
            .unwrap()
            .timeout(Duration::from_secs(5));
        let url = Url::parse("https://as.example/authorize").unwrap();
        assert!(redirect.authorize(url).await.is_err());
    }
}
