//! DPoP on the wire (RFC 9449): the credentials of one try (`Authorization` and its proof), the
//! server's latest nonce, and the refusal that asks for one.

use std::sync::Mutex;

use http::header::{HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use http::{Response, StatusCode};

use mcp_streamable_protocol::headers::DPOP_NONCE;

/// What one try of a request carries to authorize itself.
#[derive(Debug, Default)]
pub(crate) struct Credentials {
    pub(crate) authorization: Option<HeaderValue>,
    /// The `DPoP` proof, made for this try alone.
    pub(crate) proof: Option<HeaderValue>,
}

/// The last `DPoP-Nonce` the server sent: it may hand a new one with any answer, and every
/// proof after that carries it.
#[derive(Debug, Default)]
pub(crate) struct Nonce(Mutex<Option<HeaderValue>>);

impl Nonce {
    pub(crate) fn current(&self) -> Option<HeaderValue> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Keeps the nonce of an answer, if it has one.
    pub(crate) fn remember(&self, headers: &HeaderMap) {
        if let Some(nonce) = headers.get(DPOP_NONCE) {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(nonce.clone());
        }
    }
}

/// Whether the answer is a resource server's demand for a nonce (RFC 9449, section 9): 401,
/// a challenge with `error="use_dpop_nonce"`, and the nonce.
pub(crate) fn asks_for_nonce<B>(response: &Response<B>) -> bool {
    response.status() == StatusCode::UNAUTHORIZED
        && response.headers().contains_key(DPOP_NONCE)
        && response
            .headers()
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("use_dpop_nonce"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)]) -> Response<()> {
        let mut response = Response::builder().status(status);
        for (name, value) in headers {
            response = response.header(*name, *value);
        }
        response.body(()).unwrap()
    }

    #[test]
    fn a_nonce_demand_is_a_401_with_the_error_and_the_nonce() {
        let challenge = ("www-authenticate", r#"DPoP error="use_dpop_nonce""#);
        let nonce = ("dpop-nonce", "n1");
        assert!(asks_for_nonce(&answer(401, &[challenge, nonce])));
        assert!(!asks_for_nonce(&answer(401, &[challenge])));
        assert!(!asks_for_nonce(&answer(400, &[challenge, nonce])));
        let other = ("www-authenticate", r#"DPoP error="invalid_token""#);
        assert!(!asks_for_nonce(&answer(401, &[other, nonce])));
    }

    #[test]
    fn the_last_nonce_sent_is_kept() {
        let kept = Nonce::default();
        assert_eq!(kept.current(), None);
        kept.remember(answer(200, &[("dpop-nonce", "n1")]).headers());
        kept.remember(answer(200, &[]).headers());
        assert_eq!(kept.current().unwrap(), "n1");
        kept.remember(answer(401, &[("dpop-nonce", "n2")]).headers());
        assert_eq!(kept.current().unwrap(), "n2");
    }
}
