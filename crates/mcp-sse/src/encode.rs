//! Writing events and comments in the `text/event-stream` format (E5).
//!
//! Every field is written as `name: value` with exactly one space, so a value that itself starts
//! with a space survives the scanner, which drops one leading space. An empty value is written as
//! a bare `name:`.

use std::fmt::Write as _;

use bytes::BytesMut;
use memchr::{memchr, memchr2};

use crate::{EncodeError, Event, EventRef};

impl EventRef<'_> {
    /// Appends this event to `dst`: `event`, `id`, `retry` and `data` lines, then a blank line.
    ///
    /// Data holding CR, LF or CRLF is split into several `data` lines, so a scanner gives it back
    /// with every line break turned into LF. At least one `data` line is always written, even for
    /// empty data: a block without one is not dispatched by a WHATWG parser, and an event with an
    /// id and empty data is how a server primes a resumable stream. An empty `name` is the
    /// default type and is not written.
    ///
    /// # Errors
    /// A name or id holding CR or LF, or an id holding NUL (which a parser would ignore), is
    /// refused, and then nothing is written to `dst`.
    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let name = self.name.filter(|name| !name.is_empty());
        if name.is_some_and(has_line_break) {
            return Err(EncodeError::LineBreakInName);
        }
        if let Some(id) = self.id {
            if has_line_break(id) {
                return Err(EncodeError::LineBreakInId);
            }
            if memchr(0, id.as_bytes()).is_some() {
                return Err(EncodeError::NulInId);
            }
        }

        // One reservation covers a single-line event; further data lines grow `dst` as needed.
        let name_len = name.map_or(0, |name| name.len() + 8);
        let id_len = self.id.map_or(0, |id| id.len() + 5);
        let retry_len = if self.retry.is_some() { 28 } else { 0 };
        dst.reserve(name_len + id_len + retry_len + self.data.len() + 8);

        if let Some(name) = name {
            put_field(dst, b"event", name.as_bytes());
        }
        if let Some(id) = self.id {
            put_field(dst, b"id", id.as_bytes());
        }
        if let Some(retry) = self.retry {
            // `BytesMut` grows as needed, so writing to it cannot fail.
            let _ = writeln!(dst, "retry: {}", retry.as_millis());
        }
        put_lines(dst, b"data", self.data.as_bytes());
        dst.extend_from_slice(b"\n");
        Ok(())
    }

    /// The number of bytes [`encode`](Self::encode) appends for this event, when it accepts
    /// it: for a buffer made to the size of what goes in it.
    pub fn encoded_len(&self) -> usize {
        let name = self.name.filter(|name| !name.is_empty());
        let name_len = name.map_or(0, |name| field_len(b"event", name.as_bytes()));
        let id_len = self.id.map_or(0, |id| field_len(b"id", id.as_bytes()));
        let retry_len = self.retry.map_or(0, |retry| {
            let mut digits = 1;
            let mut millis = retry.as_millis();
            while millis >= 10 {
                millis /= 10;
                digits += 1;
            }
            "retry: \n".len() + digits
        });
        name_len + id_len + retry_len + lines_len(b"data", self.data.as_bytes()) + 1
    }
}

impl Event {
    /// Appends this event to `dst`; see [`EventRef::encode`] for the format.
    ///
    /// # Errors
    /// A name or id holding CR or LF, or an id holding NUL, is refused, and then nothing is
    /// written to `dst`.
    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.as_ref().encode(dst)
    }
}

/// Appends a comment to `dst`: `:text` and a line end, one comment line per line of `text`.
///
/// A scanner ignores comments; servers send them as keep-alives, so that proxies and clients see
/// traffic on an idle stream. A comment does not end an event, so write it between events.
pub fn encode_comment(text: &str, dst: &mut BytesMut) {
    dst.reserve(text.len() + 2);
    put_lines(dst, b"", text.as_bytes());
}

fn has_line_break(text: &str) -> bool {
    memchr2(b'\r', b'\n', text.as_bytes()).is_some()
}

/// Writes `name:` and the value, with a space between them unless the value is empty (or the
/// name is: a comment is `:text`).
fn put_field(dst: &mut BytesMut, name: &[u8], value: &[u8]) {
    dst.extend_from_slice(name);
    if value.is_empty() || name.is_empty() {
        dst.extend_from_slice(b":");
    } else {
        dst.extend_from_slice(b": ");
    }
    dst.extend_from_slice(value);
    dst.extend_from_slice(b"\n");
}

/// Writes one `name` field per line of `text`, where lines end in CR, LF or CRLF. Text ending
/// in a line break ends in an empty field, so that the break survives the round trip.
fn put_lines(dst: &mut BytesMut, name: &[u8], mut text: &[u8]) {
    while let Some(end) = memchr2(b'\r', b'\n', text) {
        put_field(dst, name, &text[..end]);
        let crlf = text[end] == b'\r' && text.get(end + 1) == Some(&b'\n');
        text = &text[end + 1 + usize::from(crlf)..];
    }
    put_field(dst, name, text);
}

/// The bytes [`put_field`] writes.
fn field_len(name: &[u8], value: &[u8]) -> usize {
    let separator = if value.is_empty() || name.is_empty() {
        1
    } else {
        2
    };
    name.len() + separator + value.len() + 1
}

/// The bytes [`put_lines`] writes.
fn lines_len(name: &[u8], mut text: &[u8]) -> usize {
    let mut len = 0;
    while let Some(end) = memchr2(b'\r', b'\n', text) {
        len += field_len(name, &text[..end]);
        let crlf = text[end] == b'\r' && text.get(end + 1) == Some(&b'\n');
        text = &text[end + 1 + usize::from(crlf)..];
    }
    len + field_len(name, text)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Its encoding, whose length `encoded_len` foretold.
    fn encoded(event: &Event) -> String {
        let mut buf = BytesMut::new();
        event.encode(&mut buf).expect("valid event");
        assert_eq!(event.as_ref().encoded_len(), buf.len(), "{event:?}");
        String::from_utf8(buf.to_vec()).expect("utf-8")
    }

    #[test]
    fn fields_come_in_order_event_id_retry_data() {
        let event = Event::new("{}")
            .with_name("message")
            .with_id("0_7")
            .with_retry(Duration::from_millis(1500));
        assert_eq!(
            encoded(&event),
            "event: message\nid: 0_7\nretry: 1500\ndata: {}\n\n"
        );
    }

    #[test]
    fn single_line_event_is_exactly_id_and_data() {
        let mut buf = BytesMut::new();
        EventRef::new("{\"a\":1}")
            .with_id("3_17")
            .encode(&mut buf)
            .expect("valid");
        assert_eq!(&buf[..], b"id: 3_17\ndata: {\"a\":1}\n\n");
    }

    #[test]
    fn e5_multi_line_data_becomes_several_data_lines() {
        assert_eq!(
            encoded(&Event::new("a\nb\r\nc\rd")),
            "data: a\ndata: b\ndata: c\ndata: d\n\n"
        );
        assert_eq!(encoded(&Event::new("a\n")), "data: a\ndata:\n\n");
        assert_eq!(encoded(&Event::new("\r\n")), "data:\ndata:\n\n");
        assert_eq!(encoded(&Event::new("\n\r")), "data:\ndata:\ndata:\n\n");
    }

    #[test]
    fn e5_empty_data_still_writes_one_data_line() {
        assert_eq!(encoded(&Event::new("")), "data:\n\n");
        assert_eq!(
            encoded(&Event::new("").with_id("1_0")),
            "id: 1_0\ndata:\n\n"
        );
    }

    #[test]
    fn leading_space_in_a_value_is_kept_by_the_single_separator_space() {
        assert_eq!(
            encoded(&Event::new(" x").with_id(" 1")),
            "id:  1\ndata:  x\n\n"
        );
    }

    #[test]
    fn empty_name_is_not_written_but_empty_id_is() {
        assert_eq!(encoded(&Event::new("x").with_name("")), "data: x\n\n");
        assert_eq!(encoded(&Event::new("x").with_id("")), "id:\ndata: x\n\n");
    }

    #[test]
    fn e5_line_breaks_in_name_or_id_are_refused_and_nothing_is_written() {
        let cases = [
            (
                Event::new("x").with_name("a\nb"),
                EncodeError::LineBreakInName,
            ),
            (
                Event::new("x").with_name("a\r"),
                EncodeError::LineBreakInName,
            ),
            (Event::new("x").with_id("\n1"), EncodeError::LineBreakInId),
            (Event::new("x").with_id("1\r"), EncodeError::LineBreakInId),
            (Event::new("x").with_id("1\0"), EncodeError::NulInId),
        ];
        for (event, expected) in cases {
            let mut buf = BytesMut::from(&b"kept"[..]);
            assert_eq!(event.encode(&mut buf), Err(expected), "{event:?}");
            assert_eq!(&buf[..], b"kept");
        }
    }

    #[test]
    fn comments_are_one_line_per_line_of_text() {
        let mut buf = BytesMut::new();
        encode_comment("", &mut buf);
        encode_comment("keep-alive", &mut buf);
        encode_comment("a\r\nb\rc\n", &mut buf);
        assert_eq!(&buf[..], b":\n:keep-alive\n:a\n:b\n:c\n:\n");
    }

    #[test]
    fn retry_is_written_in_whole_milliseconds() {
        let event = Event::new("").with_retry(Duration::from_micros(2_500_900));
        assert_eq!(encoded(&event), "retry: 2500\ndata:\n\n");
    }
}
