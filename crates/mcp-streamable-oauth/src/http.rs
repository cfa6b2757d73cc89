//! The requests to the resource's and the authorization server's endpoints: hyper-util's
//! pooled client (the stack the transport uses), JSON in, form or JSON out, bodies capped.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;
use url::Url;

use crate::error::{Error, ErrorKind};

/// The most a metadata document or token answer may weigh: real ones are a few KiB.
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024;

#[cfg(feature = "rustls")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "rustls"))]
type Connector = HttpConnector;

/// An answer: status, headers and body (redirects are never followed).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as JSON, for a 2xx answer.
    pub(crate) fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| Error::new(ErrorKind::Http).with(e))
    }
}

/// The HTTP client of the OAuth provider.
#[derive(Clone, Debug)]
pub(crate) struct HttpClient {
    client: Client<Connector, Full<Bytes>>,
    timeout: Duration,
}

impl HttpClient {
    /// A client whose requests each take at most `timeout`; `https` trusts `tls` when given, else
    /// the platform's roots (or the webpki roots where the platform has none).
    pub(crate) fn new(
        timeout: Duration,
        #[cfg(feature = "rustls")] tls: Option<rustls::ClientConfig>,
    ) -> Result<HttpClient, Error> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(timeout));
        #[cfg(feature = "rustls")]
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(match tls {
                Some(tls) => tls,
                None => tls::config()?,
            })
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(http);
        #[cfg(not(feature = "rustls"))]
        let connector = http;
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(HttpClient { client, timeout })
    }

    /// GET, accepting JSON.
    pub(crate) async fn get(&self, url: &Url) -> Result<Answer, Error> {
        let request = Request::get(url.as_str())
            .header(ACCEPT, "application/json")
            .body(Full::default());
        self.send(request).await
    }

    /// POST a form (`application/x-www-form-urlencoded`), with the headers given (the
    /// client's `Authorization`, a `DPoP` proof).
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<Answer, Error> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let mut request = Request::post(url.as_str())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        self.send(request.body(Full::new(Bytes::from(body)))).await
    }

    /// POST a JSON document.
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        json: &serde_json::Value,
    ) -> Result<Answer, Error> {
        let request = Request::post(url.as_str())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(json.to_string())));
        self.send(request).await
    }

    async fn send(&self, request: http::Result<Request<Full<Bytes>>>) -> Result<Answer, Error> {
        let request = request.map_err(|e| Error::new(ErrorKind::Config).with(e))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| Error::new(ErrorKind::Http).with(e))?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = Limited::new(response.into_body(), MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|e| Error::new(ErrorKind::Http).with(e))?
                .to_bytes();
            Ok(Answer {
                status,
                headers,
                body,
            })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or_else(|_| Err(Error::new(ErrorKind::Http).detail("timed out")))
    }
}

/// Whether the URL may carry OAuth traffic: https, or http to a loopback host (tests, and
/// authorization servers on the same machine). OAuth 2.1, section 1.5: every endpoint but a
/// loopback redirect is https.
pub(crate) fn check_secure(url: &Url) -> Result<(), Error> {
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if url.scheme() == "https" || (url.scheme() == "http" && loopback) {
        Ok(())
    } else {
        Err(Error::new(ErrorKind::Config).detail(format!("not https: {url}")))
    }
}

#[cfg(feature = "rustls")]
mod tls {
    use crate::error::{Error, ErrorKind};

    /// The platform's roots, or the webpki roots where the platform has none.
    pub(super) fn config() -> Result<rustls::ClientConfig, Error> {
        use hyper_rustls::ConfigBuilderExt;

        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let builder = || {
            rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .map_err(|e| Error::new(ErrorKind::Config).with(e))
        };
        match builder()?.with_native_roots() {
            Ok(native) => Ok(native.with_no_client_auth()),
            Err(e) => {
                tracing::debug!(error = %e, "no platform roots; trusting the webpki roots");
                Ok(builder()?.with_webpki_roots().with_no_client_auth())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        let ok = |s: &str| check_secure(&Url::parse(s).unwrap()).is_ok();
        assert!(ok("https://as.example.com/token"));
        assert!(ok("http://127.0.0.1:8080/token"));
        assert!(ok("http://localhost:1/x"));
        assert!(ok("http://[::1]:1/x"));
        assert!(!ok("http://as.example.com/token"));
        assert!(!ok("ftp://127.0.0.1/x"));
    }
}
