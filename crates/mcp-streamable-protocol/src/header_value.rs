//! The values of the 2026-07-28 headers that mirror the body (`Mcp-Method`, `Mcp-Name`): plain
//! visible ASCII as it is, anything else as `=?base64?<standard padded base64 of its UTF-8>?=`.

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::HeaderValue;

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// A header value carrying `value`: as it is when it is plain visible ASCII (spaces allowed
/// inside), else `=?base64?...?=`. Values with a control or non-ASCII character, with leading
/// or trailing whitespace, or that look like the encoded form themselves are encoded.
///
/// ```
/// use mcp_streamable_protocol::{decode_header_value, encode_header_value};
///
/// let value = encode_header_value("Hello, 世界");
/// assert_eq!(value, "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// assert_eq!(decode_header_value(&value).unwrap(), "Hello, 世界");
/// assert_eq!(encode_header_value("get_weather"), "get_weather");
/// ```
pub fn encode_header_value(value: &str) -> HeaderValue {
    let visible = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with(PREFIX) && value.ends_with(SUFFIX);
    if visible
        && !padded
        && !sentinel
        && let Ok(header) = HeaderValue::from_str(value)
    {
        return header;
    }
    let encoded = format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(value));
    // Base64 and its marks are visible ASCII, which a header value always admits.
    HeaderValue::from_maybe_shared(encoded).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Why a header value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The raw value has bytes outside visible ASCII, space and tab.
    NotVisibleAscii,
    /// The `=?base64?...?=` value is not standard, padded base64.
    InvalidBase64,
    /// The `=?base64?...?=` value does not decode to UTF-8.
    NotUtf8,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DecodeError::NotVisibleAscii => {
                "it is not visible ASCII (encode such values as =?base64?...?=)"
            }
            DecodeError::InvalidBase64 => "its =?base64?...?= value is not valid base64",
            DecodeError::NotUtf8 => "its =?base64?...?= value does not decode to UTF-8",
        })
    }
}

impl std::error::Error for DecodeError {}

/// Reads a header value: optional whitespace around it is not part of it (RFC 9110), and
/// `=?base64?...?=` (markers case-sensitive) carries the UTF-8 of the value.
pub fn decode_header_value(raw: &HeaderValue) -> Result<Cow<'_, str>, DecodeError> {
    let text = std::str::from_utf8(raw.as_bytes())
        .ok()
        .filter(|t| t.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)))
        .ok_or(DecodeError::NotVisibleAscii)?;
    let text = text.trim_matches([' ', '\t']);
    let Some(encoded) = text
        .strip_prefix(PREFIX)
        .and_then(|t| t.strip_suffix(SUFFIX))
    else {
        return Ok(Cow::Borrowed(text));
    };
    let decoded = STANDARD
        .decode(encoded)
        .map_err(|_| DecodeError::InvalidBase64)?;
    String::from_utf8(decoded)
        .map(Cow::Owned)
        .map_err(|_| DecodeError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_trimmed_and_decoded() {
        let ok: &[(&str, &str)] = &[
            ("tools/call", "tools/call"),
            ("  get_weather\t", "get_weather"),
            ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
            ("=?base64?IHBhZGRlZCA=?=", " padded "),
            ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
            // The markers are case-sensitive: anything else is a plain value.
            ("=?BASE64?SGk=?=", "=?BASE64?SGk=?="),
            ("=?base64?", "=?base64?"),
        ];
        for (raw, want) in ok {
            let value = HeaderValue::from_str(raw).unwrap();
            assert_eq!(decode_header_value(&value).as_deref(), Ok(*want), "{raw}");
        }
        let bad: &[(&[u8], DecodeError)] = &[
            (b"=?base64?SGVsbG8?=", DecodeError::InvalidBase64),
            (b"=?base64?SGVsbG8*?=", DecodeError::InvalidBase64),
            (b"=?base64?/w==?=", DecodeError::NotUtf8),
            (b"caf\xc3\xa9", DecodeError::NotVisibleAscii),
        ];
        for (raw, want) in bad {
            let value = HeaderValue::from_bytes(raw).unwrap();
            assert_eq!(decode_header_value(&value).unwrap_err(), *want, "{raw:?}");
        }
    }

    /// Whatever the value, what is encoded decodes to it, and the plain form is kept for plain
    /// values only.
    #[test]
    fn encoding_round_trips() {
        let values = [
            "",
            "tools/call",
            "get weather",
            " leading",
            "trailing ",
            "tab\there",
            "new\nline",
            "Hello, 世界",
            "=?base64?SGk=?=",
            "=?base64?",
            "\u{7f}",
            "emoji 🦀",
            "?=",
        ];
        for value in values {
            let encoded = encode_header_value(value);
            assert_eq!(
                decode_header_value(&encoded).as_deref(),
                Ok(value),
                "{value:?}"
            );
            let plain = encoded.as_bytes() == value.as_bytes();
            let printable = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
            let padded = value.starts_with(' ') || value.ends_with(' ');
            let sentinel = value.starts_with(PREFIX) && value.ends_with(SUFFIX);
            assert_eq!(plain, printable && !padded && !sentinel, "{value:?}");
        }
        // Every byte value, alone and inside a word.
        for c in (0u32..0x800).filter_map(char::from_u32) {
            for value in [c.to_string(), format!("a{c}b")] {
                let encoded = encode_header_value(&value);
                assert_eq!(decode_header_value(&encoded).as_deref(), Ok(&*value));
            }
        }
    }
}
