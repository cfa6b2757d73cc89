//! The heads of HTTP/1.1 messages: a request's written, a response's parsed (RFC 9112).

use std::mem::MaybeUninit;

use bytes::{Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::response::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, Version};

use mcp_streamable_protocol::headers::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};

use super::decode::Framing;
use super::error::H1Error;

/// The longest response head read: hyper's default bound is about as large, and MCP servers'
/// heads are a few hundred bytes.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// The most header fields a response head may have, as hyper allows.
const MAX_HEADERS: usize = 100;

/// A response's head, and what it tells of its body and connection.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) parts: Parts,
    pub(crate) framing: Framing,
    /// The connection may carry another exchange after this one.
    pub(crate) keep_alive: bool,
}

/// Writes a request line: `target` is the URI in origin form.
pub(crate) fn write_request_line(method: &Method, target: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
}

/// Writes a header field.
pub(crate) fn write_field(name: &HeaderName, value: &HeaderValue, out: &mut Vec<u8>) {
    out.extend_from_slice(name.as_str().as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Ends a request head: with the `Content-Length` of a body, if the request has one (a GET or
/// a DELETE does without).
pub(crate) fn write_end(body: Option<usize>, out: &mut Vec<u8>) {
    if let Some(len) = body {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Where a header field lies in the head: its name's and its value's ranges.
#[derive(Clone, Copy)]
struct Field {
    name: (u32, u32),
    value: (u32, u32),
}

const NO_FIELD: Field = Field {
    name: (0, 0),
    value: (0, 0),
};

/// Parses the response head at the front of `buf`, and takes it out; `None` while the head is
/// incomplete. Interim (1xx) responses are skipped.
pub(crate) fn parse(buf: &mut BytesMut) -> Result<Option<Head>, H1Error> {
    loop {
        if buf.is_empty() {
            return Ok(None);
        }
        let mut headers = [const { MaybeUninit::uninit() }; MAX_HEADERS];
        let mut fields = [NO_FIELD; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut response,
            buf,
            &mut headers,
        );
        let len = match parsed {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => return Ok(None),
            Ok(httparse::Status::Partial) => return Err(H1Error::HeadTooLarge { limit: MAX_HEAD }),
            Err(e) => return Err(H1Error::Head(e)),
        };
        if len > MAX_HEAD {
            return Err(H1Error::HeadTooLarge { limit: MAX_HEAD });
        }
        let start = buf.as_ptr() as usize;
        let at = |s: &[u8]| {
            let from = (s.as_ptr() as usize - start) as u32;
            (from, from + s.len() as u32)
        };
        for (field, header) in fields.iter_mut().zip(response.headers.iter()) {
            field.name = at(header.name.as_bytes());
            field.value = at(header.value);
        }
        let count = response.headers.len();
        let version = match response.version {
            Some(0) => Version::HTTP_10,
            _ => Version::HTTP_11,
        };
        let code = response.code.unwrap_or_default();
        let head = buf.split_to(len).freeze();
        match code {
            101 => return Err(H1Error::Upgrade),
            100..=199 => continue,
            _ => {}
        }
        let status =
            StatusCode::from_u16(code).map_err(|_| H1Error::Head(httparse::Error::Status))?;
        let (headers, framing) = header_map(&head, &fields[..count])?;
        return Ok(Some(finish(status, version, headers, framing)));
    }
}

/// What a head's fields say of its body and connection, gathered as they are read.
#[derive(Default)]
struct Fields {
    /// The length all `Content-Length` values agree on.
    length: Option<u64>,
    /// Whether the last transfer coding is `chunked`, if any is named.
    chunked: Option<bool>,
    /// `Connection: close`.
    close: bool,
}

impl Fields {
    fn see(&mut self, name: &HeaderName, value: &[u8]) -> Result<(), H1Error> {
        if name == CONTENT_LENGTH {
            for item in value.split(|b| *b == b',') {
                let n = content_length(item.trim_ascii())?;
                if self.length.is_some_and(|l| l != n) {
                    return Err(H1Error::ContentLength);
                }
                self.length = Some(n);
            }
        } else if name == TRANSFER_ENCODING {
            // The last coding named: empty list elements do not count (RFC 9110, section
            // 5.6.1.2), and a field of none leaves the body to the close.
            let mut codings = value.rsplit(|b| *b == b',').map(<[u8]>::trim_ascii);
            let last = codings
                .find(|coding| !coding.is_empty())
                .unwrap_or_default();
            let chunked = last.eq_ignore_ascii_case(b"chunked");
            self.chunked = Some(chunked || (self.chunked == Some(true) && last.is_empty()));
        } else if name == CONNECTION {
            let mut tokens = value.split(|b| *b == b',');
            self.close |= tokens.any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
        Ok(())
    }
}

fn header_map(head: &Bytes, fields: &[Field]) -> Result<(HeaderMap, Fields), H1Error> {
    let mut map = HeaderMap::with_capacity(fields.len());
    let mut seen = Fields::default();
    for field in fields {
        let name = header_name(&head[field.name.0 as usize..field.name.1 as usize])?;
        let value = head.slice(field.value.0 as usize..field.value.1 as usize);
        seen.see(&name, &value)?;
        let value = HeaderValue::from_maybe_shared(value)
            .map_err(|_| H1Error::Head(httparse::Error::HeaderValue))?;
        map.append(name, value);
    }
    Ok((map, seen))
}

/// A header field's name. The names outside the standard set that MCP servers send on every
/// answer are constants here, which `HeaderName::from_bytes` would copy into an allocation of
/// their own each time: the session's and version's, and `X-Accel-Buffering` (which keeps
/// nginx from buffering an event stream).
fn header_name(name: &[u8]) -> Result<HeaderName, H1Error> {
    if name.eq_ignore_ascii_case(b"mcp-session-id") {
        return Ok(MCP_SESSION_ID);
    }
    if name.eq_ignore_ascii_case(b"mcp-protocol-version") {
        return Ok(MCP_PROTOCOL_VERSION);
    }
    if name.eq_ignore_ascii_case(b"x-accel-buffering") {
        return Ok(HeaderName::from_static("x-accel-buffering"));
    }
    HeaderName::from_bytes(name).map_err(|_| H1Error::Head(httparse::Error::HeaderName))
}

/// The head's parts, the framing of its body (RFC 9112, section 6.3) and whether the connection
/// stays open after it.
fn finish(status: StatusCode, version: Version, headers: HeaderMap, fields: Fields) -> Head {
    let no_body = status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let (framing, keep_alive) = match (fields.chunked, fields.length) {
        _ if no_body => (Framing::Length(0), true),
        // A length beside an encoding may have been meant to smuggle: the connection is not
        // reused.
        (Some(true), length) => (Framing::Chunked, length.is_none()),
        (Some(false), _) => (Framing::Close, false),
        (None, Some(length)) => (Framing::Length(length), true),
        (None, None) => (Framing::Close, false),
    };
    let keep_alive = keep_alive && version == Version::HTTP_11 && !fields.close;
    let mut parts = Response::new(()).into_parts().0;
    parts.status = status;
    parts.version = version;
    parts.headers = headers;
    Head {
        parts,
        framing,
        keep_alive,
    }
}

/// One `Content-Length` item: decimal digits only.
fn content_length(item: &[u8]) -> Result<u64, H1Error> {
    if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
        return Err(H1Error::ContentLength);
    }
    std::str::from_utf8(item)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or(H1Error::ContentLength)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(wire: &[u8]) -> Result<Option<Head>, H1Error> {
        parse(&mut BytesMut::from(wire))
    }

    #[test]
    fn a_request_head_has_its_headers_and_length() {
        let mut out = Vec::new();
        write_request_line(&Method::POST, "/mcp?x=1", &mut out);
        write_field(
            &http::header::HOST,
            &HeaderValue::from_static("h:1"),
            &mut out,
        );
        write_end(Some(2), &mut out);
        assert_eq!(
            out,
            b"POST /mcp?x=1 HTTP/1.1\r\nhost: h:1\r\ncontent-length: 2\r\n\r\n"
        );
        out.clear();
        write_request_line(&Method::GET, "/mcp", &mut out);
        write_end(None, &mut out);
        assert_eq!(out, b"GET /mcp HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn a_response_head_is_taken_whole_and_split_from_its_body() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-A: 1\r\nx-a: 2\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n";
        for cut in 0..wire.len() - 3 {
            assert!(parsed(&wire[..cut]).unwrap().is_none(), "cut {cut}");
        }
        let mut buf = BytesMut::from(&wire[..]);
        let head = parse(&mut buf).unwrap().unwrap();
        assert_eq!(&buf[..], b"5\r\n");
        assert_eq!(head.parts.status, StatusCode::OK);
        assert_eq!(head.parts.headers["content-type"], "text/event-stream");
        assert_eq!(head.parts.headers.get_all("x-a").iter().count(), 2);
        assert_eq!(head.framing, Framing::Chunked);
        assert!(head.keep_alive);
    }

    #[test]
    fn the_mcp_header_names_are_the_constants() {
        let buffering = HeaderName::from_static("x-accel-buffering");
        for name in [MCP_SESSION_ID, MCP_PROTOCOL_VERSION, buffering] {
            let upper = name.as_str().to_ascii_uppercase();
            assert_eq!(header_name(upper.as_bytes()).unwrap(), name);
        }
        assert_eq!(header_name(b"X-Other").unwrap(), "x-other");
    }

    #[test]
    fn interim_responses_are_skipped() {
        let head = parsed(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(head.parts.status, StatusCode::ACCEPTED);
        assert_eq!(head.framing, Framing::Length(0));
        assert!(matches!(
            parsed(b"HTTP/1.1 101 Switching Protocols\r\n\r\n"),
            Err(H1Error::Upgrade)
        ));
    }

    #[test]
    fn the_framing_and_the_keep_alive_follow_rfc_9112() {
        let case = |wire: &str| {
            let head = parsed(wire.as_bytes()).unwrap().unwrap();
            (head.framing, head.keep_alive)
        };
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n"),
            (Framing::Length(7), true)
        );
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ncontent-length: 7, 7\r\n\r\n"),
            (Framing::Length(7), true)
        );
        assert_eq!(case("HTTP/1.1 200 OK\r\n\r\n"), (Framing::Close, false));
        assert_eq!(
            case("HTTP/1.1 204 No Content\r\n\r\n"),
            (Framing::Length(0), true)
        );
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ncontent-length: 7\r\nConnection: keep-alive, Close\r\n\r\n"),
            (Framing::Length(7), false)
        );
        assert_eq!(
            case("HTTP/1.0 200 OK\r\ncontent-length: 7\r\n\r\n"),
            (Framing::Length(7), false)
        );
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n"),
            (Framing::Chunked, true)
        );
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n"),
            (Framing::Chunked, false)
        );
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n"),
            (Framing::Close, false)
        );
        // Empty list elements do not count (found by the differential test, `fuzz`).
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked,\r\n\r\n"),
            (Framing::Chunked, true)
        );
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntransfer-encoding:\r\n\r\n"),
            (Framing::Chunked, true)
        );
        assert_eq!(
            case("HTTP/1.1 200 OK\r\ntransfer-encoding: ,\r\n\r\n"),
            (Framing::Close, false)
        );
    }

    #[test]
    fn bad_heads_are_errors() {
        for wire in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\ncontent-length: 8\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length:\r\n\r\n",
            b"HTTP/2 200 OK\r\n\r\n",
            b"HTTP/1.1 20 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
        ] {
            assert!(parsed(wire).is_err(), "{}", String::from_utf8_lossy(wire));
        }
        let long = format!("HTTP/1.1 200 OK\r\nx: {}\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(
            parsed(long.as_bytes()),
            Err(H1Error::HeadTooLarge { limit: MAX_HEAD })
        ));
        let many = format!(
            "HTTP/1.1 200 OK\r\n{}\r\n",
            "x: y\r\n".repeat(MAX_HEADERS + 1)
        );
        assert!(parsed(many.as_bytes()).is_err());
    }
}
