//! Certificates for tests (the `testing` feature): an authority made on the spot, the
//! certificates it signs, and the rustls configurations of a client that trusts it and of a
//! server that presents them. Tests of `https` need them on both sides; nothing else should.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate authority made for a test.
pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate an [`Authority`] signed, and its key, in PEM.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// The certificate.
    pub cert: String,
    /// Its private key (PKCS#8).
    pub key: String,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").finish_non_exhaustive()
    }
}

impl Authority {
    /// An authority named `name`. Two authorities of a test must not share a name, or a client
    /// would take one for the other and see a bad signature rather than an unknown issuer.
    ///
    /// # Panics
    ///
    /// If rcgen cannot make a key or a certificate: a test's environment is broken then.
    pub fn new(name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("a key");
        let issuer = CertifiedIssuer::self_signed(params, key).expect("a self-signed authority");
        Authority { issuer }
    }

    /// A certificate for `names` (DNS names or IP addresses), valid from the start of the year
    /// `valid.0` to that of `valid.1` when given, for years otherwise.
    ///
    /// # Panics
    ///
    /// On a name rcgen refuses, or when it cannot make a key.
    pub fn sign(&self, names: &[&str], valid: Option<(i32, i32)>) -> Leaf {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("valid names");
        if let Some((from, to)) = valid {
            params.not_before = rcgen::date_time_ymd(from, 1, 1);
            params.not_after = rcgen::date_time_ymd(to, 1, 1);
        }
        let key = KeyPair::generate().expect("a key");
        let cert = params.signed_by(&key, &self.issuer).expect("a certificate");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }

    /// A client configuration that trusts this authority alone (ring provider, no ALPN: the
    /// [`Connector`](crate::Connector) sets it).
    pub fn client_config(&self) -> rustls::ClientConfig {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(self.issuer.der().clone())
            .expect("the authority's own certificate parses");
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring speaks TLS 1.2 and 1.3")
            .with_root_certificates(roots)
            .with_no_client_auth()
    }
}

impl Leaf {
    /// A server configuration presenting this certificate, offering `alpn` (`b"h2"`,
    /// `b"http/1.1"`; none at all when empty).
    ///
    /// # Panics
    ///
    /// If the certificate and key do not match, which [`Authority::sign`] never makes.
    pub fn server_config(&self, alpn: &[&[u8]]) -> Arc<rustls::ServerConfig> {
        let cert = CertificateDer::from_pem_slice(self.cert.as_bytes()).expect("a certificate");
        let key = PrivateKeyDer::from_pem_slice(self.key.as_bytes()).expect("a key");
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring speaks TLS 1.2 and 1.3")
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .expect("the certificate's own key");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
