//! TLS for [`Options::serve`](super::Options::serve) (feature `tls`): rustls with the ring
//! provider, HTTP/2 and HTTP/1.1 offered by ALPN, and a certificate that can be replaced while
//! the server runs.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

/// The protocols offered by ALPN, the preferred first (RFC 7301): a client that speaks HTTP/2
/// gets it, and HTTP/1.1 clients still connect.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// How [`Options::serve`](super::Options::serve) terminates TLS: give it to
/// [`Options::tls`](super::Options::tls).
///
/// [`Tls::from_pem_files`] reads a certificate chain and its key from PEM files, and
/// [`Tls::reload`] reads them again, for a certificate renewed while the server runs (on
/// `SIGHUP`, say, or a timer): connections that begin after it get the new certificate, open
/// ones keep theirs. [`Tls::from_config`] takes a rustls configuration as it is, for client
/// certificates or ALPN other than the default.
///
/// The TLS handshake runs within the header read timeout, as the first bytes of a plain
/// connection do: a client that stalls the handshake is closed.
///
/// ```no_run
/// use mcp_streamable_server::serve::{Options, Tls};
///
/// # fn run() -> std::io::Result<()> {
/// let tls = Tls::from_pem_files("/etc/mcp/cert.pem", "/etc/mcp/key.pem")?;
/// let options = Options::default().path("/mcp").tls(tls.clone());
/// // Later, once the files were renewed:
/// tls.reload()?;
/// # let _ = options;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    files: Option<Arc<Files>>,
}

/// The PEM files a [`Tls`] was read from, and the certificate it serves, which a reload swaps.
struct Files {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: Arc<Current>,
}

/// The certificate served to every handshake, replaced whole by a reload.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self.0.read().unwrap_or_else(|e| e.into_inner()),
        ))
    }
}

impl Tls {
    /// Reads the certificate chain (the server's certificate first) and its private key
    /// (PKCS#8, PKCS#1 or SEC1) from PEM files. Fails, saying which, when a file cannot be
    /// read, holds no certificate or key, or the key is not the certificate's.
    pub fn from_pem_files(cert: impl AsRef<Path>, key: impl AsRef<Path>) -> io::Result<Tls> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (cert, key) = (cert.as_ref().to_owned(), key.as_ref().to_owned());
        let certified = load(&cert, &key, &provider)?;
        let current = Arc::new(Current(RwLock::new(Arc::new(certified))));
        let mut config = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(invalid)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(&current) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            files: Some(Arc::new(Files {
                cert,
                key,
                provider,
                current,
            })),
        })
    }

    /// Serves with this rustls configuration as it is: its certificates, client
    /// authentication and ALPN (set `alpn_protocols` to `h2` and `http/1.1` for both versions;
    /// without ALPN, clients speak HTTP/1.1 unless they know the server speaks HTTP/2). Such a
    /// `Tls` has no files to [`reload`](Tls::reload); a resolver of the configuration's own
    /// can change certificates.
    pub fn from_config(config: Arc<ServerConfig>) -> Tls {
        Tls {
            acceptor: TlsAcceptor::from(config),
            files: None,
        }
    }

    /// Reads the PEM files again and serves their certificate to the connections that begin
    /// from now on. On an error (a file half written, a key that is not the certificate's) the
    /// certificate served so far stays, and the error says what is wrong. Fails for a `Tls`
    /// made [`from_config`](Tls::from_config).
    pub fn reload(&self) -> io::Result<()> {
        let Some(files) = &self.files else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this TLS configuration was not read from files",
            ));
        };
        let certified = load(&files.cert, &files.key, &files.provider)?;
        *files.current.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(certified);
        tracing::info!(cert = %files.cert.display(), "TLS certificate reloaded");
        Ok(())
    }

    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Tls");
        match &self.files {
            Some(files) => d.field("cert", &files.cert).field("key", &files.key),
            None => d.field("config", &"rustls::ServerConfig"),
        };
        d.finish_non_exhaustive()
    }
}

/// The certificate chain and key of two PEM files, checked to belong together.
fn load(cert: &Path, key: &Path, provider: &CryptoProvider) -> io::Result<CertifiedKey> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| pem_error(cert, "certificate", e))?;
    if chain.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: no certificate in the file", cert.display()),
        ));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| pem_error(key, "key", e))?;
    CertifiedKey::from_der(chain, private, provider).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} and {}: {e}", cert.display(), key.display()),
        )
    })
}

fn pem_error(path: &Path, what: &str, error: rustls::pki_types::pem::Error) -> io::Error {
    use rustls::pki_types::pem::Error;
    match error {
        Error::Io(e) => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
        Error::NoItemsFound => io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: no {what} in the file", path.display()),
        ),
        other => io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not a PEM {what}: {other}", path.display()),
        ),
    }
}

fn invalid(error: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, error)
}
