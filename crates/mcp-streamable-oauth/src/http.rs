//! The requests to the resource's and the authorization server's endpoints, through the
//! provider's [`HttpClient`] (`mcp-http-client`'s `Client` unless the application gives its
//! own): JSON in, form or JSON out, bodies capped, every exchange bounded in time.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Request, StatusCode};
use mcp_http_client::HttpClient;
use serde::de::DeserializeOwned;
use url::Url;

use crate::error::{Error, ErrorKind};

/// The most a metadata document or token answer may weigh: real ones are a few KiB.
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024;

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

/// The HTTP side of the OAuth provider.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    client: Arc<dyn HttpClient>,
    timeout: Duration,
}

impl Http {
    /// Requests through `client`, each taking at most `timeout` whatever the client's own bound.
    pub(crate) fn new(client: Arc<dyn HttpClient>, timeout: Duration) -> Http {
        Http { client, timeout }
    }

    /// The default client: `mcp-http-client`'s, bounded by `timeout` and [`MAX_BODY_BYTES`];
    /// `https` trusts `tls` when given, else the platform's roots (or the webpki roots where
    /// the platform has none).
    pub(crate) fn default_client(
        timeout: Duration,
        #[cfg(feature = "rustls")] tls: Option<rustls::ClientConfig>,
    ) -> Result<Arc<dyn HttpClient>, Error> {
        let builder = mcp_http_client::Client::builder()
            .timeout(timeout)
            .max_body_bytes(MAX_BODY_BYTES);
        #[cfg(feature = "rustls")]
        let builder = match tls {
            Some(tls) => builder.tls_config(tls),
            None => builder,
        };
        let client = builder
            .build()
            .map_err(|e| Error::new(ErrorKind::Config).with(e))?;
        Ok(Arc::new(client))
    }

    /// GET, accepting JSON.
    pub(crate) async fn get(&self, url: &Url) -> Result<Answer, Error> {
        let request = Request::get(url.as_str())
            .header(ACCEPT, "application/json")
            .body(Bytes::new());
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
        self.send(request.body(Bytes::from(body))).await
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
            .body(Bytes::from(json.to_string()));
        self.send(request).await
    }

    async fn send(&self, request: http::Result<Request<Bytes>>) -> Result<Answer, Error> {
        let request = request.map_err(|e| Error::new(ErrorKind::Config).with(e))?;
        let exchange = self.client.send(request);
        let response = tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or_else(|_| Err(mcp_http_client::Error::timeout()))
            .map_err(|e| Error::new(ErrorKind::Http).with(e))?;
        let (parts, body) = response.into_parts();
        // The bound holds whatever client the application gave.
        if body.len() > MAX_BODY_BYTES {
            let e = mcp_http_client::Error::body_too_large(MAX_BODY_BYTES);
            return Err(Error::new(ErrorKind::Http).with(e));
        }
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
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
