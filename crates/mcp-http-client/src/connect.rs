//! Opening connections: TCP through hyper-util's `HttpConnector` (names resolved off the
//! runtime, both address families tried, a connect timeout), then TLS over it for `https`.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
#[cfg(feature = "rustls")]
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tower_service::Service;

#[cfg(feature = "rustls")]
use crate::error::Error;
use crate::stream::Stream;

/// A connection being opened.
pub type Connecting = Pin<Box<dyn Future<Output = io::Result<Stream>> + Send>>;

/// Opens [`Stream`]s: TCP with `TCP_NODELAY` for `http`, TLS over it for `https` once
/// [enabled](Connector::https), offering HTTP/2 and HTTP/1.1 by ALPN.
///
/// It is also a connector for hyper-util's pooled client (a `Service<Uri>`), so that the
/// requests a caller sends itself and those it leaves to hyper-util go over the same TCP and
/// TLS. Cloning is cheap: clones share the TLS configuration.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use std::time::Duration;
/// use mcp_http_client::Connector;
///
/// let connector = Connector::new(Duration::from_secs(10)).https(None)?;
/// let stream = connector.connect(&"https://example.com/".parse()?).await?;
/// println!("HTTP/2: {}", stream.is_h2());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Connector {
    tcp: HttpConnector,
    #[cfg(feature = "rustls")]
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Connector");
        #[cfg(feature = "rustls")]
        debug.field("https", &self.tls.is_some());
        debug.finish_non_exhaustive()
    }
}

impl Connector {
    /// A connector for `http`, whose connections take at most `connect_timeout` to open. `https`
    /// fails until [enabled](Connector::https).
    pub fn new(connect_timeout: Duration) -> Connector {
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(connect_timeout));
        // The scheme is this connector's to check, not the TCP connector's.
        tcp.enforce_http(false);
        Connector {
            tcp,
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }

    /// Sends TCP keep-alive probes on a connection idle for `idle`, every `interval`, and ends
    /// it after `retries` unanswered: a server that vanished without closing (a crashed host, a
    /// dropped NAT entry) is noticed even while nothing is being sent.
    pub fn tcp_keepalive(mut self, idle: Duration, interval: Duration, retries: u32) -> Connector {
        self.tcp.set_keepalive(Some(idle));
        self.tcp.set_keepalive_interval(Some(interval));
        self.tcp.set_keepalive_retries(Some(retries));
        self
    }

    /// Enables `https`, through `config` or, when `None`, [`tls::default_config`] (which reads
    /// the platform's roots: enable `https` only where it may be needed). The connector sets the
    /// configuration's ALPN to HTTP/2 and HTTP/1.1.
    ///
    /// [`tls::default_config`]: crate::tls::default_config
    #[cfg(feature = "rustls")]
    pub fn https(mut self, config: Option<rustls::ClientConfig>) -> Result<Connector, Error> {
        let config = match config {
            Some(config) => config,
            None => crate::tls::default_config()?,
        };
        self.tls = Some(crate::tls::with_alpn(config));
        Ok(self)
    }

    /// Opens a connection to `uri`'s host and port (the scheme's default port when it names
    /// none): TCP, and TLS over it for `https`, the server's certificate checked against the
    /// host.
    pub fn connect(&self, uri: &Uri) -> Connecting {
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Box::pin(async { Err(io::Error::other("not an http or https url")) }),
        };
        let tcp = self.tcp.clone().call(uri.clone());
        if !https {
            return Box::pin(async move {
                Ok(Stream::tcp(
                    tcp.await.map_err(io::Error::other)?.into_inner(),
                ))
            });
        }
        self.connect_tls(uri, tcp)
    }

    #[cfg(feature = "rustls")]
    fn connect_tls(&self, uri: &Uri, tcp: <HttpConnector as Service<Uri>>::Future) -> Connecting {
        let Some(config) = self.tls.clone() else {
            return Box::pin(async { Err(io::Error::other("https is not enabled")) });
        };
        let name = server_name(uri);
        Box::pin(async move {
            let name = name?;
            let tcp = tcp.await.map_err(io::Error::other)?.into_inner();
            let tls = tokio_rustls::TlsConnector::from(config);
            Ok(Stream::tls(tls.connect(name, tcp).await?))
        })
    }

    #[cfg(not(feature = "rustls"))]
    fn connect_tls(&self, _: &Uri, _: <HttpConnector as Service<Uri>>::Future) -> Connecting {
        Box::pin(async { Err(io::Error::other("https needs the `rustls` feature")) })
    }
}

/// The name the server's certificate must be valid for: the URI's host, a domain name or an IP
/// address (without the brackets of an IPv6 one).
#[cfg(feature = "rustls")]
fn server_name(uri: &Uri) -> io::Result<rustls::pki_types::ServerName<'static>> {
    let host = uri.host().unwrap_or_default();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

impl Service<Uri> for Connector {
    type Response = TokioIo<Stream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<Stream>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.connect(&uri);
        Box::pin(async move { connecting.await.map(TokioIo::new) })
    }
}

#[cfg(all(test, feature = "rustls"))]
mod tests {
    use super::*;

    #[test]
    fn certificates_are_checked_against_the_host() {
        let name = |uri: &str| {
            server_name(&uri.parse().unwrap())
                .unwrap()
                .to_str()
                .into_owned()
        };
        assert_eq!(name("https://example.com:8443/mcp"), "example.com");
        assert_eq!(name("https://127.0.0.1/"), "127.0.0.1");
        assert_eq!(name("https://[::1]:8443/"), "::1");
    }

    #[tokio::test]
    async fn https_needs_enabling_and_other_schemes_fail() {
        let connector = Connector::new(Duration::from_secs(1));
        let error = |uri: &str| {
            let connecting = connector.connect(&uri.parse().unwrap());
            async move { connecting.await.unwrap_err().to_string() }
        };
        assert_eq!(error("https://127.0.0.1:1/").await, "https is not enabled");
        assert_eq!(
            error("ftp://127.0.0.1:1/").await,
            "not an http or https url"
        );
    }
}
