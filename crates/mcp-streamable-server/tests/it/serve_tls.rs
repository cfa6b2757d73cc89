//! S25: `serve` terminating TLS. A client that stalls the handshake is closed within the header
//! read timeout, as a plain connection that sends nothing is; files that do not hold a
//! certificate and its key are refused with what is wrong. (Sessions over TLS, with this
//! project's client on HTTP/2 and HTTP/1.1, untrusted certificates and a reload, are the
//! client's tests: `mcp-streamable-client/tests/it/tls.rs`.)

use std::path::PathBuf;
use std::time::Duration;

use mcp_streamable_server::serve::{Options, Tls};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Far more than the header read timeout these tests set, and still bounded.
const LIMIT: Duration = Duration::from_secs(5);
use crate::serve::start;

/// A directory of its own for one test's files, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("mcp-serve-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    /// Writes `text` to the file `name`; its path.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A self-signed certificate for `localhost` and its key, in PEM files of `dir`.
fn certificate(dir: &Dir) -> (PathBuf, PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = dir.file("cert.pem", &made.cert.pem());
    let key = dir.file("key.pem", &made.signing_key.serialize_pem());
    (cert, key)
}

/// Whether the server closes `tcp` (end of stream or reset) within `limit`.
async fn closed_within(tcp: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(limit, tcp.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[tokio::test]
async fn s25_a_client_that_stalls_the_tls_handshake_is_closed_within_the_header_read_timeout() {
    let dir = Dir::new("stall");
    let (cert, key) = certificate(&dir);
    let options = Options::default()
        .header_read_timeout(Duration::from_millis(200))
        .tls(Tls::from_pem_files(cert, key).unwrap());
    let running = start(options).await;

    // Silent from the start.
    let mut silent = TcpStream::connect(running.addr).await.unwrap();
    // The start of a TLS record (a handshake, TLS 1.0 on the wire), never finished.
    let mut trickled = TcpStream::connect(running.addr).await.unwrap();
    trickled.write_all(&[0x16, 0x03, 0x01]).await.unwrap();

    assert!(
        closed_within(&mut silent, LIMIT).await,
        "a silent client was kept"
    );
    assert!(
        closed_within(&mut trickled, LIMIT).await,
        "a stalled handshake was kept"
    );
    running.stop().await;
}

#[test]
fn s25_files_without_a_certificate_and_its_key_are_refused_with_what_is_wrong() {
    let dir = Dir::new("files");
    let (cert, key) = certificate(&dir);
    let missing = dir.0.join("missing.pem");
    let empty = dir.file("empty.pem", "");
    let garbled = dir.file(
        "garbled.pem",
        "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
    );

    let error = |cert: &PathBuf, key: &PathBuf| Tls::from_pem_files(cert, key).unwrap_err();
    let e = error(&missing, &key);
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(e.to_string().contains("missing.pem"), "{e}");
    let e = error(&empty, &key).to_string();
    assert!(e.contains("empty.pem: no certificate"), "{e}");
    let e = error(&garbled, &key).to_string();
    assert!(e.contains("garbled.pem: not a PEM certificate"), "{e}");
    let e = error(&cert, &empty).to_string();
    assert!(e.contains("empty.pem: no key"), "{e}");
    // A certificate given as the key.
    let e = error(&cert, &cert).to_string();
    assert!(e.contains("cert.pem: no key"), "{e}");
    assert!(Tls::from_pem_files(&cert, &key).is_ok());
}

#[test]
fn s25_a_tls_made_from_a_rustls_configuration_has_no_files_to_reload() {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![made.cert.der().clone()], key)
    .unwrap();
    let tls = Tls::from_config(std::sync::Arc::new(config));
    let error = tls.reload().unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::Unsupported);
    assert!(format!("{tls:?}").starts_with("Tls"));
}
