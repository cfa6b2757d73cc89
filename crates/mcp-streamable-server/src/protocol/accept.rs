//! Reading the request headers of the transport: `Accept`, `Content-Type`, and headers that
//! must be given once.

use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName};

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
pub(crate) fn single<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a str>, ()> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(());
    }
    first.to_str().map(Some).map_err(|_| ())
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
}
