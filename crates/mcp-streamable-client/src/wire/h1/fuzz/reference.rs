//! Plain readings of RFC 9112 for the differential tests, on whole inputs, written from the
//! RFC's grammar rather than from the decoders: the chunked transfer coding (section 7.1) and
//! how a response's head frames its body and its connection (sections 6.1, 6.3 and 9.3).
//!
//! Lines end with CRLF: a LF without its CR ends no line and is an error where it stands, a CR
//! without its LF is a byte like any other (and no grammar here allows it). The one leniency
//! the decoders share with hyper and httparse: white space before the CRLF of a chunk size line,
//! for servers that pad the size to a fixed width.

/// What a chunked body reads as.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Chunked {
    /// Its data, and how many bytes of the input the body took, trailers included.
    Body { data: Vec<u8>, used: usize },
    /// The input ends before the body does, and nothing read so far is wrong.
    Incomplete,
    /// Something read is wrong.
    Invalid,
}

/// `chunked-body = *chunk last-chunk trailer-section CRLF` (RFC 9112, section 7.1).
pub(super) fn chunked(input: &[u8]) -> Chunked {
    let mut at = 0;
    let mut data = Vec::new();
    loop {
        let (line, next) = match line(input, at) {
            Line::Found(line, next) => (line, next),
            Line::Incomplete => return Chunked::Incomplete,
            Line::BareLf => return Chunked::Invalid,
        };
        let Some(size) = chunk_size_line(line) else {
            return Chunked::Invalid;
        };
        at = next;
        if size == 0 {
            break;
        }
        let Some(end) = usize::try_from(size).ok().and_then(|s| at.checked_add(s)) else {
            return Chunked::Incomplete;
        };
        let Some(chunk) = input.get(at..end) else {
            return Chunked::Incomplete;
        };
        data.extend_from_slice(chunk);
        at = end;
        match input.get(at..at + 2) {
            Some(b"\r\n") => at += 2,
            None if input[at..].iter().all(|b| *b == b'\r') => return Chunked::Incomplete,
            _ => return Chunked::Invalid,
        }
    }
    trailers(input, at, data)
}

/// `trailer-section = *( field-line CRLF )`, then the CRLF that ends the body.
fn trailers(input: &[u8], mut at: usize, data: Vec<u8>) -> Chunked {
    loop {
        let (line, next) = match line(input, at) {
            Line::Found(line, next) => (line, next),
            Line::Incomplete => return Chunked::Incomplete,
            Line::BareLf => return Chunked::Invalid,
        };
        if line.is_empty() {
            return Chunked::Body { data, used: next };
        }
        if !field_line(line) {
            return Chunked::Invalid;
        }
        at = next;
    }
}

enum Line<'a> {
    /// A line's content, and where the next starts.
    Found(&'a [u8], usize),
    Incomplete,
    BareLf,
}

/// The line starting at `at`.
fn line(input: &[u8], at: usize) -> Line<'_> {
    let rest = &input[at..];
    match rest.iter().position(|b| *b == b'\n') {
        None => Line::Incomplete,
        Some(lf) if lf > 0 && rest[lf - 1] == b'\r' => Line::Found(&rest[..lf - 1], at + lf + 1),
        Some(_) => Line::BareLf,
    }
}

/// `chunk-size [ chunk-ext ]` (section 7.1.1): the size, when the line is one.
///
/// ```text
/// chunk-size = 1*HEXDIG
/// chunk-ext  = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
/// chunk-ext-name = token
/// chunk-ext-val  = token / quoted-string
/// ```
pub(super) fn chunk_size_line(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return None;
    }
    let mut size = 0u64;
    for digit in &line[..digits] {
        let value = char::from(*digit).to_digit(16)?;
        size = size.checked_mul(16)?.checked_add(u64::from(value))?;
    }
    let mut rest = &line[digits..];
    loop {
        rest = skip_whitespace(rest);
        match rest.split_first() {
            None => return Some(size),
            Some((b';', after)) => rest = extension(skip_whitespace(after))?,
            Some(_) => return None,
        }
    }
}

/// One extension after its `;`: the rest of the line after it.
fn extension(rest: &[u8]) -> Option<&[u8]> {
    let name = token_len(rest);
    if name == 0 {
        return None;
    }
    let after_name = &rest[name..];
    let spaced = skip_whitespace(after_name);
    let Some((b'=', value)) = spaced.split_first() else {
        return Some(after_name);
    };
    let value = skip_whitespace(value);
    if value.first() == Some(&b'"') {
        return quoted_string(value);
    }
    match token_len(value) {
        0 => None,
        n => Some(&value[n..]),
    }
}

/// `quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE`: the rest after it.
fn quoted_string(input: &[u8]) -> Option<&[u8]> {
    let qdtext = |b: u8| {
        b == b'\t'
            || b == b' '
            || b == 0x21
            || ((0x23..=0x7e).contains(&b) && b != b'\\')
            || b >= 0x80
    };
    let pair = |b: u8| b == b'\t' || b == b' ' || (0x21..=0x7e).contains(&b) || b >= 0x80;
    let mut at = 1;
    loop {
        match *input.get(at)? {
            b'"' => return Some(&input[at + 1..]),
            b'\\' => {
                if !pair(*input.get(at + 1)?) {
                    return None;
                }
                at += 2;
            }
            b if qdtext(b) => at += 1,
            _ => return None,
        }
    }
}

/// `field-line = field-name ":" OWS field-value OWS` (section 5), as a trailer.
pub(super) fn field_line(line: &[u8]) -> bool {
    let name = token_len(line);
    let value_byte = |b: &u8| *b == b'\t' || *b == b' ' || (0x21..=0x7e).contains(b) || *b >= 0x80;
    name > 0 && line.get(name) == Some(&b':') && line[name + 1..].iter().all(value_byte)
}

/// The length of the `token` at the start of `input` (RFC 9110, section 5.6.2).
fn token_len(input: &[u8]) -> usize {
    let tchar = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    input.iter().take_while(|b| tchar(b)).count()
}

/// `input` after its leading spaces and tabs (`OWS`, `BWS`).
fn skip_whitespace(input: &[u8]) -> &[u8] {
    let n = input
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .count();
    &input[n..]
}

/// How a response's body ends, and whether its connection carries another exchange after it.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(super) enum Body {
    Length(u64),
    Chunked,
    Close,
}

/// Section 6.3, for the response to a request that is neither HEAD nor CONNECT, with what
/// the client decided where the RFC lets it: a `Content-Length` list of one value repeated is
/// that value (RFC 9110, section 8.6), an HTTP/1.0 answer is never followed by another on its
/// connection. `None` when the framing is invalid (section 6.3, item 5).
pub(super) fn framing(
    http10: bool,
    status: u16,
    fields: &[(String, Vec<u8>)],
) -> Option<(Body, bool)> {
    let mut length = None;
    for value in values(fields, "content-length") {
        for item in value.split(|b| *b == b',') {
            let item = item.trim_ascii();
            if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let n: u64 = std::str::from_utf8(item).ok()?.parse().ok()?;
            if length.is_some_and(|l| l != n) {
                return None;
            }
            length = Some(n);
        }
    }
    let codings = elements(fields, "transfer-encoding");
    let has_encoding = values(fields, "transfer-encoding").next().is_some();
    let close = elements(fields, "connection").iter().any(|t| t == b"close");
    let (body, reusable) = if status == 204 || status == 304 {
        (Body::Length(0), true)
    } else if has_encoding {
        match codings.last().map(Vec::as_slice) {
            Some(b"chunked") => (Body::Chunked, length.is_none()),
            _ => (Body::Close, false),
        }
    } else {
        match length {
            Some(n) => (Body::Length(n), true),
            None => (Body::Close, false),
        }
    };
    Some((body, reusable && !http10 && !close))
}

/// The values of the fields named `name`.
fn values<'a>(fields: &'a [(String, Vec<u8>)], name: &'a str) -> impl Iterator<Item = &'a [u8]> {
    fields
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_slice())
}

/// Every element of every field named `name`, lower case, the empty ones left out (RFC 9110,
/// section 5.6.1.2).
fn elements(fields: &[(String, Vec<u8>)], name: &str) -> Vec<Vec<u8>> {
    values(fields, name)
        .flat_map(|v| v.split(|b| *b == b','))
        .map(|e| e.trim_ascii().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .collect()
}
