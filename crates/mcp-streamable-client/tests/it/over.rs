//! How the tests' servers are reached: plain HTTP/1.1, HTTP/2 by prior knowledge, or TLS with a
//! certificate the test authority signed for `localhost`, where ALPN offers HTTP/1.1 alone or
//! HTTP/2 first. Tests that hold whatever carries the exchange run over each.

use std::net::SocketAddr;
use std::sync::LazyLock;

use mcp_http_client::testing::{Authority, Leaf};
use mcp_streamable_client::{ClientBuilder, Family};
use tokio::net::TcpStream;
use tokio_util::either::Either;

/// The authority the TLS servers' certificate comes from, and the certificate.
static PKI: LazyLock<(Authority, Leaf)> = LazyLock::new(|| {
    let authority = Authority::new("client tests");
    let leaf = authority.sign(&["localhost"], None);
    (authority, leaf)
});

/// What carries a test's exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// Plain HTTP/1.1: the client's own connections.
    Http1,
    /// Plain HTTP/2 by prior knowledge: hyper-util's client.
    Http2,
    /// TLS, ALPN offering HTTP/1.1 alone: the client's own connections over TLS.
    Tls1,
    /// TLS, ALPN offering HTTP/2 first: hyper-util's client, on the connection that found out.
    Tls2,
}

/// A server's connection: plain, or TLS.
pub(crate) type Io = Either<TcpStream, tokio_rustls::server::TlsStream<TcpStream>>;

impl Wire {
    /// Every way (TLS with the `rustls` feature).
    #[cfg(feature = "rustls")]
    pub(crate) const ALL: &[Wire] = &[Wire::Http1, Wire::Http2, Wire::Tls1, Wire::Tls2];
    #[cfg(not(feature = "rustls"))]
    pub(crate) const ALL: &[Wire] = &[Wire::Http1, Wire::Http2];
    /// The ways of a server that speaks HTTP/1.1 alone.
    #[cfg(feature = "rustls")]
    pub(crate) const HTTP1: &[Wire] = &[Wire::Http1, Wire::Tls1];
    #[cfg(not(feature = "rustls"))]
    pub(crate) const HTTP1: &[Wire] = &[Wire::Http1];

    fn is_tls(self) -> bool {
        matches!(self, Wire::Tls1 | Wire::Tls2)
    }

    /// The endpoint `/mcp` of a server listening at `addr`.
    pub(crate) fn url(self, addr: SocketAddr) -> String {
        match self.is_tls() {
            true => format!("https://localhost:{}/mcp", addr.port()),
            false => format!("http://{addr}/mcp"),
        }
    }

    /// The tests' [`builder`](crate::builder) for `url`, trusting the test authority, speaking
    /// HTTP/2 by prior knowledge where asked.
    pub(crate) fn builder(self, url: &str) -> ClientBuilder {
        let builder = crate::builder(url).http2_prior_knowledge(self == Wire::Http2);
        #[cfg(feature = "rustls")]
        let builder = match self.is_tls() {
            true => builder.tls_config(PKI.0.client_config()),
            false => builder,
        };
        builder
    }

    /// [`builder`](Wire::builder) for a session of the 2025 protocol, without the standalone
    /// stream: the requests a test sends are all there is on the wire.
    pub(crate) fn session_builder(self, url: &str) -> ClientBuilder {
        self.builder(url)
            .family(Family::Session)
            .standalone_stream(false)
    }

    /// Takes an accepted connection through the TLS handshake, where there is one; `None` when
    /// it fails.
    pub(crate) async fn accept(self, tcp: TcpStream) -> Option<Io> {
        let alpn: &[&[u8]] = match self {
            Wire::Http1 | Wire::Http2 => return Some(Either::Left(tcp)),
            Wire::Tls1 => &[b"http/1.1"],
            Wire::Tls2 => &[b"h2", b"http/1.1"],
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(PKI.1.server_config(alpn));
        acceptor.accept(tcp).await.ok().map(Either::Right)
    }
}

/// The TCP connection under `io`.
pub(crate) fn tcp(io: &Io) -> &TcpStream {
    match io {
        Either::Left(tcp) => tcp,
        Either::Right(tls) => tls.get_ref().0,
    }
}
