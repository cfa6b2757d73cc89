//! A reference reading of a body, to check `parse` against, written from the texts and nothing
//! else: RFC 3629 for UTF-8, RFC 8259 for JSON text, JSON-RPC 2.0 for messages, plus the
//! restrictions the crate documents (MCP's ids: integers within `i64` or strings, never a null
//! request id; `"params": null` read as absent; no member of a message given twice; member
//! names that are text; no byte order mark). It builds a whole tree by plain recursive descent and asks it questions: slow,
//! and sharing no code with serde_json.

use std::ops::Range;

use mcp_jsonrpc::{Body, ErrorObject, Id, Message, Notification, RawValue, Request, Response};

/// What a body reads as: its messages, or the error code and the batch element at fault.
pub(crate) type Outcome = Result<Body, (i64, Option<usize>)>;

const PARSE_ERROR: (i64, Option<usize>) = (-32700, None);
const INVALID: i64 = -32600;

/// A JSON value and where its text is in the body.
#[derive(Debug)]
struct Node {
    value: Value,
    span: Range<usize>,
}

#[derive(Debug)]
enum Value {
    Null,
    Bool,
    /// The number's value if it is an integer (no fraction, no exponent) within `i64`, and not
    /// `-0`.
    Number(Option<i64>),
    /// The text of the string, or `None` if an escape left a lone surrogate, which no Unicode
    /// text can hold (RFC 8259 section 8.2).
    String(Option<String>),
    Array(Vec<Node>),
    /// Members in order, duplicates kept.
    Object(Vec<(Option<String>, Node)>),
}

pub(crate) fn parse(bytes: &[u8]) -> Outcome {
    if !is_utf8(bytes) {
        return Err(PARSE_ERROR);
    }
    let mut reader = Reader { bytes, at: 0 };
    let node = reader.text().ok_or(PARSE_ERROR)?;
    let text = std::str::from_utf8(bytes).expect("checked above");
    match &node.value {
        Value::Array(elements) if elements.is_empty() => Err((INVALID, None)),
        Value::Array(elements) => elements
            .iter()
            .enumerate()
            .map(|(i, element)| message(text, element).ok_or((INVALID, Some(i))))
            .collect::<Result<_, _>>()
            .map(Body::Batch),
        _ => message(text, &node)
            .map(Body::Single)
            .ok_or((INVALID, None)),
    }
}

/// RFC 3629 section 4, UTF8-octets, byte by byte.
fn is_utf8(bytes: &[u8]) -> bool {
    let mut i = 0;
    while i < bytes.len() {
        let tail = |n: usize, first: Range<u8>| {
            i + n < bytes.len() + 1
                && bytes[i + 1..i + n].iter().enumerate().all(|(k, &b)| {
                    let allowed = if k == 0 { first.clone() } else { 0x80..0xC0 };
                    allowed.contains(&b)
                })
        };
        let len = match bytes[i] {
            0x00..=0x7F => 1,
            0xC2..=0xDF if tail(2, 0x80..0xC0) => 2,
            0xE0 if tail(3, 0xA0..0xC0) => 3,
            0xE1..=0xEC | 0xEE..=0xEF if tail(3, 0x80..0xC0) => 3,
            0xED if tail(3, 0x80..0xA0) => 3,
            0xF0 if tail(4, 0x90..0xC0) => 4,
            0xF1..=0xF3 if tail(4, 0x80..0xC0) => 4,
            0xF4 if tail(4, 0x80..0x90) => 4,
            _ => return false,
        };
        i += len;
    }
    true
}

/// RFC 8259 section 2 onwards, one rule per function.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    /// JSON-text = ws value ws
    fn text(&mut self) -> Option<Node> {
        self.ws();
        let node = self.value()?;
        self.ws();
        (self.at == self.bytes.len()).then_some(node)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let found = self.bytes[self.at..].starts_with(word);
        self.at += if found { word.len() } else { 0 };
        found
    }

    fn value(&mut self) -> Option<Node> {
        let start = self.at;
        let value = match self.peek()? {
            b'n' if self.literal(b"null") => Value::Null,
            b't' if self.literal(b"true") => Value::Bool,
            b'f' if self.literal(b"false") => Value::Bool,
            b'"' => Value::String(self.string()?),
            b'[' => Value::Array(self.array()?),
            b'{' => Value::Object(self.object()?),
            b'-' | b'0'..=b'9' => Value::Number(self.number()?),
            _ => return None,
        };
        Some(Node {
            value,
            span: start..self.at,
        })
    }

    /// array = begin-array [ value *( value-separator value ) ] end-array
    fn array(&mut self) -> Option<Vec<Node>> {
        self.at += 1;
        self.ws();
        let mut elements = Vec::new();
        if self.eat(b']') {
            return Some(elements);
        }
        loop {
            self.ws();
            elements.push(self.value()?);
            self.ws();
            if self.eat(b']') {
                return Some(elements);
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// object = begin-object [ member *( value-separator member ) ] end-object
    fn object(&mut self) -> Option<Vec<(Option<String>, Node)>> {
        self.at += 1;
        self.ws();
        let mut members = Vec::new();
        if self.eat(b'}') {
            return Some(members);
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return None;
            }
            let name = self.string()?;
            self.ws();
            if !self.eat(b':') {
                return None;
            }
            self.ws();
            members.push((name, self.value()?));
            self.ws();
            if self.eat(b'}') {
                return Some(members);
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// number = [ minus ] int [ frac ] [ exp ]; the value only if it is an integer in `i64`.
    fn number(&mut self) -> Option<Option<i64>> {
        let start = self.at;
        self.eat(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let mut integer = true;
        if self.eat(b'.') {
            integer = false;
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if self.eat(b'e') || self.eat(b'E') {
            integer = false;
            let _ = self.eat(b'+') || self.eat(b'-');
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        // `-0` is an integer, but one an `i64` cannot give back as written: refused as an id.
        let text = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
        Some(
            (integer && text != "-0")
                .then(|| text.parse::<i64>().ok())
                .flatten(),
        )
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    /// string = quotation-mark *char quotation-mark, decoded through UTF-16 as section 7 has
    /// it: `None` when the escapes leave a lone surrogate.
    fn string(&mut self) -> Option<Option<String>> {
        self.at += 1;
        let mut units: Vec<u16> = Vec::new();
        loop {
            let byte = self.peek()?;
            self.at += 1;
            match byte {
                b'"' => return Some(String::from_utf16(&units).ok()),
                b'\\' => {
                    let escaped = self.peek()?;
                    self.at += 1;
                    let unit = match escaped {
                        b'"' | b'\\' | b'/' => u16::from(escaped),
                        b'b' => 0x08,
                        b'f' => 0x0C,
                        b'n' => 0x0A,
                        b'r' => 0x0D,
                        b't' => 0x09,
                        b'u' => {
                            let hex = self.bytes.get(self.at..self.at + 4)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.at += 4;
                            u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?
                        }
                        _ => return None,
                    };
                    units.push(unit);
                }
                0x00..=0x1F => return None,
                _ => {
                    // The body is UTF-8: take the whole character.
                    let start = self.at - 1;
                    while self.peek().is_some_and(|b| b & 0xC0 == 0x80) {
                        self.at += 1;
                    }
                    let text = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
                    units.extend(text.encode_utf16());
                }
            }
        }
    }
}

/// JSON-RPC 2.0 sections 4 and 5: what message, if any, an element is.
fn message(text: &str, node: &Node) -> Option<Message> {
    let members = object_members(node)?;
    let [jsonrpc, id, method, params, result, error] =
        ["jsonrpc", "id", "method", "params", "result", "error"].map(|name| member(members, name));
    let (Some(jsonrpc), id, method, params, result, error) =
        (jsonrpc?, id?, method?, params?, result?, error?)
    else {
        return None;
    };
    if !matches!(&jsonrpc.value, Value::String(Some(version)) if version == "2.0") {
        return None;
    }
    // `Some(None)` is an explicit null.
    let id: Option<Option<Id>> = match id.map(|node| &node.value) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::Number(Some(n))) => Some(Some(Id::from(*n))),
        Some(Value::String(Some(s))) => Some(Some(Id::from(s.as_str()))),
        Some(_) => return None,
    };
    let method = match method.map(|node| &node.value) {
        None => None,
        Some(Value::String(Some(s))) => Some(s.clone()),
        Some(_) => return None,
    };
    let params = match params {
        None => None,
        Some(node) => match node.value {
            Value::Null => None,
            Value::Array(_) | Value::Object(_) => Some(raw(text, node)),
            _ => return None,
        },
    };
    let error = match error {
        None => None,
        Some(node) => Some(error_object(text, node)?),
    };
    match (method, result, error, id) {
        (Some(method), None, None, None) => Some(Notification::new(method, params).into()),
        (Some(method), None, None, Some(Some(id))) => Some(Request::new(id, method, params).into()),
        (None, Some(result), None, Some(Some(id))) => {
            Some(Response::success(id, raw(text, result)).into())
        }
        (None, None, Some(error), Some(id)) => Some(Response::error(id, error).into()),
        _ => None,
    }
}

/// Section 5.1: an object with an integer `code`, a string `message` and any `data`.
fn error_object(text: &str, node: &Node) -> Option<ErrorObject> {
    let members = object_members(node)?;
    let [code, message, data] = ["code", "message", "data"].map(|name| member(members, name));
    let (Some(code), Some(message), data) = (code?, message?, data?) else {
        return None;
    };
    let (Value::Number(Some(code)), Value::String(Some(message))) = (&code.value, &message.value)
    else {
        return None;
    };
    let error = ErrorObject::new(*code, message.clone());
    Some(match data {
        Some(data) => error.with_data(raw(text, data)),
        None => error,
    })
}

/// The members of an object the parser reads by name. A name is read as text, so one that
/// cannot be (a lone surrogate) leaves the object unread, even where the member is unknown;
/// the values of unknown members are skipped, unread.
fn object_members(node: &Node) -> Option<&[(Option<String>, Node)]> {
    match &node.value {
        Value::Object(members) if members.iter().all(|(name, _)| name.is_some()) => Some(members),
        _ => None,
    }
}

/// The member named `name`: `Some(None)` if absent, `None` if given more than once.
fn member<'a>(members: &'a [(Option<String>, Node)], name: &str) -> Option<Option<&'a Node>> {
    let mut named = members
        .iter()
        .filter(|(n, _)| n.as_deref() == Some(name))
        .map(|(_, node)| node);
    let first = named.next();
    named.next().is_none().then_some(first)
}

fn raw(text: &str, node: &Node) -> Box<RawValue> {
    let json = &text[node.span.clone()];
    RawValue::from_string(json.to_owned())
        .unwrap_or_else(|error| panic!("serde_json refuses {json:?}, JSON to RFC 8259: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_reads_what_the_rfcs_say() {
        assert!(is_utf8("é€😀".as_bytes()));
        for bad in [
            &b"\xC0\x80"[..],
            b"\xED\xA0\x80",
            b"\xF4\x90\x80\x80",
            b"\xE2\x82",
            b"\x80",
        ] {
            assert!(!is_utf8(bad), "{bad:?}");
        }
        assert_eq!(parse(b" [1, 2] ").unwrap_err(), (INVALID, Some(0)));
        assert_eq!(parse(b"[]").unwrap_err(), (INVALID, None));
        for bad in [
            &b"01"[..],
            b"1.",
            b"-",
            b"1e",
            b"\"\\x\"",
            b"\"\x01\"",
            b"[1,]",
            b"{\"a\"}",
        ] {
            assert_eq!(parse(bad).unwrap_err(), PARSE_ERROR, "{bad:?}");
        }
        let body = parse(br#"{"jsonrpc":"2.0","id":0,"method":"m","params":[ 1 ]}"#).unwrap();
        let expected = Request::new(
            0_i64,
            "m",
            Some(RawValue::from_string("[ 1 ]".into()).unwrap()),
        );
        assert_eq!(body, Body::Single(expected.into()));
    }
}
