//! The header values of the transport, and reading a response's content type. The header names
//! are the shared protocol crate's ([`mcp_streamable_protocol::headers`]).

use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

/// What a POST accepts: both reply formats (C1).
pub(crate) const ACCEPT_POST: HeaderValue =
    HeaderValue::from_static("application/json, text/event-stream");
/// What a GET accepts.
pub(crate) const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");
/// The body type of every POST.
pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// The formats a reply body can come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `application/json`: one message or an array of them.
    Json,
    /// `text/event-stream`: messages as SSE events.
    Sse,
    /// Anything else, or no content type at all.
    Other,
}

/// The format of a body from its `Content-Type`, ignoring parameters and letter case.
pub(crate) fn format(headers: &HeaderMap) -> Format {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return Format::Other;
    };
    // Compared as bytes: the names sought are ASCII, so a value that is not matches neither.
    let bytes = value.as_bytes();
    let essence = match memchr::memchr(b';', bytes) {
        Some(end) => bytes[..end].trim_ascii(),
        None => bytes.trim_ascii(),
    };
    if essence.eq_ignore_ascii_case(b"text/event-stream") {
        Format::Sse
    } else if essence.eq_ignore_ascii_case(b"application/json") {
        Format::Json
    } else {
        Format::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(ct: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_static(ct));
        h
    }

    #[test]
    fn reads_the_media_type_without_parameters() {
        assert_eq!(format(&with("application/json")), Format::Json);
        assert_eq!(
            format(&with("Application/JSON; charset=utf-8")),
            Format::Json
        );
        assert_eq!(
            format(&with("text/event-stream;charset=utf-8")),
            Format::Sse
        );
        assert_eq!(format(&with("text/plain")), Format::Other);
        assert_eq!(format(&HeaderMap::new()), Format::Other);
    }
}
