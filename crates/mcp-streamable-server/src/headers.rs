//! Header names and the parsing of `Accept`, `Content-Type` and `MCP-Protocol-Version`.

use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName};

/// The session id header (S6).
pub const MCP_SESSION_ID: &str = "mcp-session-id";
/// The protocol version header (S8).
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The resumption header of a GET (S11).
pub const LAST_EVENT_ID: &str = "last-event-id";

/// The names the server writes, made once: inserting a `&str` name that is not a standard
/// header copies it, per response.
pub(crate) const SESSION_ID_HEADER: HeaderName = HeaderName::from_static(MCP_SESSION_ID);
pub(crate) const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// The method header of the 2026-07-28 protocol (M4).
pub const MCP_METHOD: &str = "mcp-method";
/// The name header of the 2026-07-28 protocol (M4): the tool, prompt or resource a request
/// names.
pub const MCP_NAME: &str = "mcp-name";

/// The protocol revisions of the session-based family, oldest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-03-26", "2025-06-18", "2025-11-25"];

/// The protocol revisions of the per-request family (2026-07-28 and later), oldest first.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// The first revision of the per-request family.
const FIRST_MODERN_VERSION: &str = "2026-07-28";

/// Whether `version` names a revision of the per-request family (M1): a `YYYY-MM-DD` date no
/// earlier than 2026-07-28, whether this server speaks it or not.
pub(crate) fn is_modern_version(version: &str) -> bool {
    let b = version.as_bytes();
    let date_shaped = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    date_shaped && version >= FIRST_MODERN_VERSION
}

/// The version assumed when a request carries no `MCP-Protocol-Version` and no session knows
/// better (S8).
pub(crate) const DEFAULT_NEGOTIATED_VERSION: &str = "2025-03-26";

/// Which of the two media types of a POST an `Accept` admits.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) event_stream: bool,
}

/// Reads every `Accept` header (S2): comma-separated lists, parameters, `q=0` refusals and the
/// `*/*` and `type/*` wildcards all count.
pub(crate) fn accepts(headers: &HeaderMap) -> Accepts {
    let mut out = Accepts::default();
    for value in headers.get_all(ACCEPT) {
        // What MCP clients send, as the specification spells it: no need to parse.
        if value.as_bytes() == b"application/json, text/event-stream" {
            out.json = true;
            out.event_stream = true;
            continue;
        }
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                let mut kv = p.splitn(2, '=');
                let key = kv.next().unwrap_or("").trim();
                let val = kv.next().unwrap_or("").trim();
                key.eq_ignore_ascii_case("q") && val.parse::<f32>().is_ok_and(|q| q <= 0.0)
            });
            if refused {
                continue;
            }
            let (main, sub) = media.split_once('/').unwrap_or((media, ""));
            let (main, sub) = (main.trim(), sub.trim());
            let any = main == "*" && sub == "*";
            let app = main.eq_ignore_ascii_case("application")
                && (sub == "*" || sub.eq_ignore_ascii_case("json"));
            let text = main.eq_ignore_ascii_case("text")
                && (sub == "*" || sub.eq_ignore_ascii_case("event-stream"));
            out.json |= any || app;
            out.event_stream |= any || text;
        }
    }
    out
}

/// Whether `Content-Type` is `application/json`, parameters allowed (S3).
pub(crate) fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim())
        .is_some_and(|media| media.eq_ignore_ascii_case("application/json"))
}

/// A single-valued header as text: `Ok(None)` when absent, `Err(())` when present but not
/// visible ASCII or given more than once.
pub(crate) fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ()> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(());
    }
    first.to_str().map(Some).map_err(|_| ())
}

/// Whether `id` is a well-formed session id: 1 to 128 visible ASCII characters (S6).
pub(crate) fn is_valid_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    use http::header::HeaderValue;

    fn with(name: http::header::HeaderName, values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(name.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn s2_accept_lists_parameters_and_wildcards() {
        let both = Accepts {
            json: true,
            event_stream: true,
        };
        let cases: &[(&[&str], Accepts)] = &[
            (&["application/json, text/event-stream"], both),
            (&["application/json", "text/event-stream"], both),
            (&["text/event-stream;q=0.9,application/json;q=0.5"], both),
            (&["*/*"], both),
            (&["application/*, text/*"], both),
            (&["APPLICATION/JSON, Text/Event-Stream"], both),
            (
                &["application/json"],
                Accepts {
                    json: true,
                    event_stream: false,
                },
            ),
            (
                &["text/event-stream"],
                Accepts {
                    json: false,
                    event_stream: true,
                },
            ),
            (
                &["application/json, text/event-stream;q=0"],
                Accepts {
                    json: true,
                    event_stream: false,
                },
            ),
            (&["text/html"], Accepts::default()),
            (&[], Accepts::default()),
        ];
        for (values, want) in cases {
            assert_eq!(accepts(&with(ACCEPT, values)), *want, "{values:?}");
        }
    }

    #[test]
    fn s3_content_type_allows_parameters() {
        assert!(is_json_content_type(&with(
            CONTENT_TYPE,
            &["application/json"]
        )));
        assert!(is_json_content_type(&with(
            CONTENT_TYPE,
            &["application/json; charset=utf-8"]
        )));
        assert!(is_json_content_type(&with(
            CONTENT_TYPE,
            &["Application/JSON"]
        )));
        assert!(!is_json_content_type(&with(CONTENT_TYPE, &["text/plain"])));
        assert!(!is_json_content_type(&with(
            CONTENT_TYPE,
            &["application/json-seq"]
        )));
        assert!(!is_json_content_type(&HeaderMap::new()));
    }

    #[test]
    fn m1_modern_versions_are_dates_from_2026_07_28() {
        for v in ["2026-07-28", "2026-12-01", "2099-01-01"] {
            assert!(is_modern_version(v), "{v}");
        }
        for v in [
            "2025-11-25",
            "2026-07-27",
            "",
            "draft",
            "zzzz-zz-zz",
            "2026-7-28",
            "2026-07-28x",
        ] {
            assert!(!is_modern_version(v), "{v}");
        }
    }

    #[test]
    fn session_ids_are_visible_ascii() {
        assert!(is_valid_session_id("abc-123_XYZ"));
        assert!(!is_valid_session_id(""));
        assert!(!is_valid_session_id("has space"));
        assert!(!is_valid_session_id(&"a".repeat(129)));
    }
}
