//! The lines of a chunked body, read as RFC 9112 (section 7.1) writes them: where a line ends,
//! a chunk's size line, a trailer's field line.
//!
//! Strict, so that a server and the client cannot read one body two ways: a line ends with
//! CRLF, and a LF without its CR is an error rather than a line end; a size line is hex digits
//! and well-formed extensions (names and values tokens, or quoted strings), nothing else. The
//! one leniency, hyper's and httparse's too: white space before the CRLF of a size line, for
//! servers that pad the size to a fixed width.

/// Why a line has no end.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unended {
    /// A LF without its CR.
    BareLf,
    /// More bytes than the bound on the line.
    TooLong,
}

/// Where the line at the front of `buf` ends: `Some(n)`, its length with its CRLF; `None` while
/// its end has not been read, after looking at the bytes from `searched` on (those before were
/// looked at already), with `searched` moved on. A line is at most `max` bytes, its CRLF
/// included.
pub(super) fn end(buf: &[u8], searched: &mut usize, max: usize) -> Result<Option<usize>, Unended> {
    let Some(lf) = memchr::memchr(b'\n', &buf[*searched..]).map(|i| *searched + i) else {
        *searched = buf.len();
        return if buf.len() > max {
            Err(Unended::TooLong)
        } else {
            Ok(None)
        };
    };
    if lf == 0 || buf[lf - 1] != b'\r' {
        return Err(Unended::BareLf);
    }
    if lf + 1 > max {
        return Err(Unended::TooLong);
    }
    Ok(Some(lf + 1))
}

/// Where a size line's reading is: each byte moves it on, or makes the line wrong.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the size's first digit.
    Start,
    /// In the size's digits.
    Size,
    /// In white space, after the size or an extension: `;` or the end may come.
    Between,
    /// After a `;`, before the name.
    BeforeName,
    /// In an extension's name.
    Name,
    /// After a name and white space: `=`, `;` or the end may come.
    AfterName,
    /// After `=`, before the value.
    BeforeValue,
    /// In a token value.
    Token,
    /// In a quoted value; after a backslash in one.
    Quoted,
    Escaped,
}

/// The size a chunk size line (without its CRLF) gives, `None` when it is not one:
/// `1*HEXDIG *( BWS ";" BWS token [ BWS "=" BWS ( token / quoted-string ) ] ) BWS`.
pub(super) fn chunk_size(line: &[u8]) -> Option<u64> {
    let mut size = 0u64;
    let mut at = At::Start;
    for &b in line {
        at = match (at, b) {
            (At::Start | At::Size, _) if b.is_ascii_hexdigit() => {
                let digit = u64::from(char::from(b).to_digit(16)?);
                size = size.checked_mul(16)?.checked_add(digit)?;
                At::Size
            }
            (At::Size | At::Between | At::Token, b' ' | b'\t') => At::Between,
            (At::Name | At::AfterName, b' ' | b'\t') => At::AfterName,
            (At::BeforeName | At::BeforeValue, b' ' | b'\t') => at,
            (At::Size | At::Between | At::Token | At::Name | At::AfterName, b';') => At::BeforeName,
            (At::Name | At::AfterName, b'=') => At::BeforeValue,
            (At::BeforeName | At::Name, _) if is_tchar(b) => At::Name,
            (At::BeforeValue | At::Token, _) if is_tchar(b) => At::Token,
            (At::BeforeValue, b'"') => At::Quoted,
            (At::Quoted, b'"') => At::Between,
            (At::Quoted, b'\\') => At::Escaped,
            (At::Quoted, _) if is_qdtext(b) => At::Quoted,
            (At::Escaped, _) if is_field_vchar(b) => At::Quoted,
            _ => return None,
        };
    }
    let ended = matches!(
        at,
        At::Size | At::Between | At::Name | At::AfterName | At::Token
    );
    ended.then_some(size)
}

/// Whether `line` (without its CRLF) is a field line: `token ":" *( VCHAR / obs-text / SP /
/// HTAB )`, the value's surrounding white space included.
pub(super) fn is_field_line(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|b| *b == b':') else {
        return false;
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    !name.is_empty()
        && name.iter().all(|b| is_tchar(*b))
        && value.iter().all(|b| is_field_vchar(*b))
}

/// A byte of a token (RFC 9110, section 5.6.2).
fn is_tchar(b: u8) -> bool {
    matches!(b, b'!' | b'#'..=b'\'' | b'*' | b'+' | b'-' | b'.' | b'^'..=b'`' | b'|' | b'~')
        || b.is_ascii_alphanumeric()
}

/// A byte of a quoted string but `"` and `\` (RFC 9110, section 5.6.4).
fn is_qdtext(b: u8) -> bool {
    b != b'"' && b != b'\\' && is_field_vchar(b)
}

/// A visible byte, obs-text, a space or a tab: what a field value and a quoted pair hold.
fn is_field_vchar(b: u8) -> bool {
    matches!(b, b'\t' | b' '..=b'~' | 0x80..=0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_lines_follow_the_grammar() {
        for (line, size) in [
            (&b"5"[..], Some(5)),
            (b"00000000000000000000a", Some(10)),
            (b"ffffffffffffffff", Some(u64::MAX)),
            (b"1ffffffffffffffff", None),
            (b"5   ", Some(5)),
            (b"5;a", Some(5)),
            (b"5 ; a = b ;c", Some(5)),
            (b"5;a=\"x \\\" y\";b", Some(5)),
            (b"", None),
            (b";a", None),
            (b" 5", None),
            (b"5;", None),
            (b"5;=b", None),
            (b"5;a=", None),
            (b"5;a b", None),
            (b"5;a=\"open", None),
            (b"5;a\nb", None),
            (b"5;a=\"\x7f\"", None),
            (b"5 x", None),
            (b"5;a;b", Some(5)),
            (b"5;a=b c", None),
        ] {
            assert_eq!(
                chunk_size(line),
                size,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn a_line_ends_with_crlf_and_no_further_than_the_bound() {
        let mut searched = 0;
        assert_eq!(end(b"5;a", &mut searched, 8), Ok(None));
        assert_eq!(searched, 3);
        assert_eq!(end(b"5;a\r\nrest", &mut searched, 8), Ok(Some(5)));
        assert_eq!(end(b"5\nrest", &mut 0, 8), Err(Unended::BareLf));
        assert_eq!(end(b"\n", &mut 0, 8), Err(Unended::BareLf));
        assert_eq!(end(b"123456789", &mut 0, 8), Err(Unended::TooLong));
        assert_eq!(end(b"1234567\r\n", &mut 0, 8), Err(Unended::TooLong));
    }

    #[test]
    fn trailer_lines_are_field_lines() {
        assert!(is_field_line(b"x-t: 1"));
        assert!(is_field_line(b"X-T:\t1 \t\xff"));
        for line in [
            &b"bad line"[..],
            b": v",
            b"x t: 1",
            b"x-t: a\rb",
            b"x-t: \x00",
        ] {
            assert!(!is_field_line(line), "{:?}", String::from_utf8_lossy(line));
        }
    }
}
