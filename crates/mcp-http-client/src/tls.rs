//! What `https` trusts and offers: rustls with the ring provider, TLS 1.2 and 1.3, the
//! platform's roots or the webpki roots, and ALPN set by the [`Connector`](crate::Connector).

use std::sync::Arc;

use crate::error::Error;

/// The protocols every connection offers by ALPN, the preferred first: HTTP/2 where the server
/// speaks it, HTTP/1.1 otherwise. Whoever reads the connection handles both.
pub(crate) const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The TLS configuration `https` uses when none is given: rustls with the ring provider
/// (TLS 1.2 and 1.3), trusting the platform's roots, or the webpki roots (Mozilla's) where the
/// platform has none. Reading the platform's roots reads files: make it once, when `https` is
/// known to be needed.
///
/// Give a configuration of your own to trust other roots (a private CA's), or to present a
/// client certificate; the [`Connector`](crate::Connector) sets its ALPN.
pub fn default_config() -> Result<rustls::ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = platform_roots().unwrap_or_else(webpki_roots);
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::tls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// The platform's roots, or `None` where it has none that parse.
fn platform_roots() -> Option<rustls::RootCertStore> {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::debug!(%error, "a platform root could not be read");
    }
    let mut roots = rustls::RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::debug!(ignored, "no platform roots; trusting the webpki roots");
        return None;
    }
    Some(roots)
}

fn webpki_roots() -> rustls::RootCertStore {
    rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// `config`, offering [`ALPN`].
pub(crate) fn with_alpn(mut config: rustls::ClientConfig) -> Arc<rustls::ClientConfig> {
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_trusts_some_roots_and_offers_both_versions() {
        let config = with_alpn(default_config().unwrap());
        assert_eq!(config.alpn_protocols, [&b"h2"[..], b"http/1.1"]);
        assert!(!webpki_roots().is_empty());
    }
}
