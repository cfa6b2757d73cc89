//! What a request's `params` say that its span records, read by a scan of their top level:
//! the members recorded are picked out, the others (a tool's `arguments`, most often the bulk)
//! are stepped over without being parsed. A derived `Deserialize` took about 1,300
//! instructions for a small `tools/call`, on every request, sampled or not; the scan about 700.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// What `params` of a request say that its span records (`gen_ai.tool.name`,
/// `gen_ai.prompt.name`, `mcp.resource.uri`, `mcp.protocol.version`, the parent in `_meta`),
/// borrowed from the request where its JSON has no escapes: a span copies nothing it does not
/// keep.
///
/// [`read`](Params::read) reads what a derived `Deserialize` would: members with escapes in
/// their names or values are decoded, and a duplicate, a member here of the wrong type (a
/// string; `_meta` any value) or anything but an object gives nothing at all. Its input comes
/// from a parsed message, so its JSON is well formed; on text that is not, it never panics and
/// gives nothing, or what it could read.
///
/// ```
/// use mcp_streamable_protocol::telemetry::Params;
///
/// let params = serde_json::value::RawValue::from_string(
///     r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"traceparent":"00-1-2-01"}}"#.into(),
/// )
/// .unwrap();
/// let read = Params::read(&params);
/// assert_eq!(read.name.as_deref(), Some("echo"));
/// assert_eq!(read.uri, None);
/// assert_eq!(read.meta.map(|m| m.get()), Some(r#"{"traceparent":"00-1-2-01"}"#));
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Params<'a> {
    /// `name`: a tool's or a prompt's.
    pub name: Option<Cow<'a, str>>,
    /// `uri`: a resource's.
    pub uri: Option<Cow<'a, str>>,
    /// `protocolVersion`: an `initialize`'s, the version its session will speak.
    pub protocol_version: Option<Cow<'a, str>>,
    /// `_meta`, as it is (most requests carry none).
    pub meta: Option<&'a RawValue>,
}

impl<'a> Params<'a> {
    /// What `params` say, or nothing when they are not an object whose members here are
    /// strings (`_meta`: any value), each once.
    pub fn read(params: &'a RawValue) -> Params<'a> {
        let mut scan = Scan {
            text: params.get(),
            at: 0,
        };
        scan.object().unwrap_or_default()
    }
}

/// The members a span records, by name.
#[derive(Clone, Copy)]
enum Member {
    Name,
    Uri,
    ProtocolVersion,
    Meta,
}

impl Member {
    fn of(key: &str) -> Option<Member> {
        match key {
            "name" => Some(Member::Name),
            "uri" => Some(Member::Uri),
            "protocolVersion" => Some(Member::ProtocolVersion),
            "_meta" => Some(Member::Meta),
            _ => None,
        }
    }
}

/// A cursor over JSON text; every step returns `None` where the text is not what it expects.
struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn object(&mut self) -> Option<Params<'a>> {
        let mut params = Params::default();
        let mut seen = [false; 4];
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            return Some(params);
        }
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            match Member::of(&key) {
                Some(member) => {
                    let first = !std::mem::replace(&mut seen[member as usize], true);
                    first.then_some(())?;
                    self.member(member, &mut params)?;
                }
                None => self.skip_value()?,
            }
            match self.next()? {
                b',' => continue,
                b'}' => return Some(params),
                _ => return None,
            }
        }
    }

    /// Reads a recorded member's value into `params`.
    fn member(&mut self, member: Member, params: &mut Params<'a>) -> Option<()> {
        if matches!(member, Member::Meta) {
            let start = self.value_start()?;
            self.skip_value()?;
            let raw = &self.text[start..self.at];
            params.meta = match raw {
                "null" => None,
                raw => Some(serde_json::from_str(raw).ok()?),
            };
            return Some(());
        }
        let value = match self.peek()? {
            b'n' => {
                self.literal("null")?;
                None
            }
            b'"' => Some(self.string()?),
            _ => return None,
        };
        match member {
            Member::Name => params.name = value,
            Member::Uri => params.uri = value,
            Member::ProtocolVersion => params.protocol_version = value,
            Member::Meta => {}
        }
        Some(())
    }

    /// The next byte that is not whitespace, not taken.
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(b) = bytes.get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(*b);
            }
            self.at += 1;
        }
        None
    }

    /// The next byte that is not whitespace, taken.
    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn expect(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// Where the next value starts, whitespace skipped.
    fn value_start(&mut self) -> Option<usize> {
        self.peek()?;
        Some(self.at)
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.peek()?;
        let rest = self.text.get(self.at..)?;
        rest.starts_with(word).then_some(())?;
        self.at += word.len();
        Some(())
    }

    /// A string, borrowed when it holds no escape, decoded otherwise.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.at;
        let escaped = self.string_rest()?;
        let inner = &self.text[start..self.at - 1];
        if !escaped {
            return Some(Cow::Borrowed(inner));
        }
        serde_json::from_str::<String>(&self.text[start - 1..self.at])
            .ok()
            .map(Cow::Owned)
    }

    /// Steps past a string whose opening quote is taken; says whether it held an escape.
    fn string_rest(&mut self) -> Option<bool> {
        let bytes = self.text.as_bytes();
        let mut escaped = false;
        loop {
            match bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.at += 2;
                }
                _ => self.at += 1,
            }
        }
    }

    /// Steps past one value of any kind: objects and arrays by their brackets, strings by their
    /// quotes, anything else to the next delimiter.
    fn skip_value(&mut self) -> Option<()> {
        let bytes = self.text.as_bytes();
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.string_rest().map(drop)
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match bytes.get(self.at)? {
                        b'"' => {
                            self.at += 1;
                            self.string_rest()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                let start = self.at;
                while let Some(b) = bytes.get(self.at) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// The reference: what a derived `Deserialize` reads, as the scan replaced.
    #[derive(Deserialize, Default, Debug)]
    struct Derived<'a> {
        #[serde(borrow)]
        name: Option<Cow<'a, str>>,
        #[serde(borrow)]
        uri: Option<Cow<'a, str>>,
        #[serde(rename = "protocolVersion", borrow)]
        protocol_version: Option<Cow<'a, str>>,
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }

    fn derived(text: &str) -> Params<'_> {
        let d: Derived<'_> = serde_json::from_str(text).unwrap_or_default();
        Params {
            name: d.name,
            uri: d.uri,
            protocol_version: d.protocol_version,
            meta: d.meta,
        }
    }

    fn scanned(text: &str) -> Params<'_> {
        let mut scan = Scan { text, at: 0 };
        scan.object().unwrap_or_default()
    }

    /// Compares the two by what a span reads of them (`RawValue` has no `PartialEq`).
    fn same(text: &str) {
        let (a, b) = (scanned(text), derived(text));
        let meta = |p: &Params<'_>| p.meta.map(|m| m.get().to_owned());
        assert_eq!(
            (&a.name, &a.uri, &a.protocol_version, meta(&a)),
            (&b.name, &b.uri, &b.protocol_version, meta(&b)),
            "{text}"
        );
    }

    #[test]
    fn the_scan_reads_what_a_derived_deserialize_reads() {
        let cases = [
            r#"{"name":"echo","arguments":{"text":"hi"}}"#,
            r#" { "arguments" : { "a" : [1, {"name": "inner"}, "x\"}"] } , "name" : "t" } "#,
            r#"{"uri":"file:///a b","_meta":{"traceparent":"00-ab-cd-01"}}"#,
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c"}}"#,
            r#"{"name":"a\u0062c\n","uri":null}"#,
            r#"{"na\u006de":"decoded key"}"#,
            r#"{"_meta":null,"name":"x"}"#,
            r#"{"_meta":[1,2],"x":true,"y":-1.5e3,"z":null}"#,
            r#"{"_meta":"s","name":"x"}"#,
            r#"{}"#,
            r#"{"name":5}"#,
            r#"{"name":"a","name":"b"}"#,
            r#"{"name":null,"name":"b"}"#,
            r#"{"uri":{"x":1}}"#,
            r#"[1,2]"#,
            r#""name""#,
            r#"{"arguments":"\\","name":"after a backslash"}"#,
            r#"{"name":"ünïcödé","arguments":{"k":"\ud83d\ude00"}}"#,
        ];
        for case in cases {
            same(case);
        }
    }

    /// Random JSON, biased towards what the scan must get right: the recorded names (escaped
    /// or not), values of every type for them, nesting, escapes, whitespace, duplicates.
    struct Random(u64);

    impl Random {
        fn below(&mut self, n: u64) -> u64 {
            // xorshift64: deterministic, so that a failure is seen again.
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
            from[self.below(from.len() as u64) as usize]
        }

        fn value(&mut self, depth: u32) -> String {
            let pieces = [
                "a", "b c", "\\\"", "\\\\", "\\n", "\\u00e9", "é", "}", "]", ",",
            ];
            match self.below(if depth > 2 { 4 } else { 6 }) {
                0 => format!("\"{}{}\"", self.pick(&pieces), self.pick(&pieces)),
                1 => self
                    .pick(&["null", "true", "false", "0", "-1.5e3", "42"])
                    .to_owned(),
                2 => "\"plain\"".to_owned(),
                3 => format!("\"{}\"", self.pick(&pieces)),
                4 => {
                    let n = self.below(3);
                    let items: Vec<String> = (0..n).map(|_| self.value(depth + 1)).collect();
                    format!("[{}]", items.join(" , "))
                }
                _ => self.object(depth + 1),
            }
        }

        fn object(&mut self, depth: u32) -> String {
            let keys = [
                "name",
                "uri",
                "protocolVersion",
                "_meta",
                "na\\u006de",
                "arguments",
                "x",
            ];
            let n = self.below(4);
            let members: Vec<String> = (0..n)
                .map(|_| format!("\"{}\":{}", self.pick(&keys), self.value(depth)))
                .collect();
            format!("{{ {} }}", members.join(","))
        }
    }

    #[test]
    fn the_scan_reads_what_a_derived_deserialize_reads_on_random_objects() {
        let mut random = Random(0x9e37_79b9_7f4a_7c15);
        let (mut named, mut escaped) = (0, 0);
        for _ in 0..5_000 {
            let text = random.object(0);
            serde_json::from_str::<serde_json::Value>(&text).expect("the generator writes JSON");
            same(&text);
            let read = derived(&text);
            named += usize::from(read.name.is_some());
            escaped += usize::from(matches!(read.name, Some(Cow::Owned(_))));
        }
        // The cases reach what they are for: names read, some of them decoded.
        assert!(
            named > 500 && escaped > 100,
            "{named} named, {escaped} escaped"
        );
    }

    #[test]
    fn malformed_text_gives_nothing_and_never_panics() {
        let cases = [
            "",
            "{",
            "{\"name\"",
            "{\"name\":",
            "{\"name\":\"x",
            "{\"name\":\"x\"",
            "{\"a\":}",
            "{\"a\":[}",
            "{\"a\":{\"b\":1}",
            "{\"name\":\"x\\",
            "{\"a\":1,}",
            "{,}",
            "}",
            "{\"name\":\"x\" \"uri\":\"y\"}",
            "{\"_meta\":{\"a\":1}",
        ];
        for case in cases {
            let p = scanned(case);
            let nothing = p.name.is_none()
                && p.uri.is_none()
                && p.protocol_version.is_none()
                && p.meta.is_none();
            assert!(nothing, "{case:?}: {p:?}");
        }
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let params = scanned(r#"{"name":"echo","uri":"a\"b"}"#);
        assert!(matches!(params.name, Some(Cow::Borrowed("echo"))));
        assert!(matches!(params.uri.as_deref(), Some("a\"b")));
        assert!(matches!(params.uri, Some(Cow::Owned(_))));
    }
}
