//! S21 and friends: a table of malformed and hostile requests. Each gets its status and a
//! JSON-RPC error body (`id: null` unless the body was one request, whose id it echoes), and
//! the server keeps serving another session in between.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, StatusCode};
use http_body::Frame;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use mcp_jsonrpc::{Id, code};
use mcp_streamable_server::{Config, InMemoryEventStore, codes};
use serde_json::json;

use crate::harness::*;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Req = Request<BoxBody<Bytes, BoxError>>;

fn boxed(r: Request<http_body_util::Full<Bytes>>) -> Req {
    r.map(|b| b.map_err(|e| match e {}).boxed())
}

fn posted(b: http::request::Builder, body: impl Into<Bytes>) -> Req {
    boxed(request(b, body))
}

/// A body that gives some bytes, then fails, as a connection cut mid-body does.
struct Truncated(Option<Bytes>);

impl http_body::Body for Truncated {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(Some(match self.0.take() {
            Some(b) => Ok(Frame::data(b)),
            None => Err("connection reset".into()),
        }))
    }
}

/// `(what, request, status, JSON-RPC code, echoed id)`.
type Case = (&'static str, Req, StatusCode, i64, Option<Id>);

#[tokio::test]
async fn s21_bad_input_table() {
    const LIMIT: usize = 64 * 1024;
    let config = Config::default()
        .max_body_bytes(LIMIT)
        .event_store(InMemoryEventStore::default());
    let service = service(config);
    let s06 = initialize(&service, "2025-06-18").await;
    let s11 = initialize(&service, "2025-11-25").await;
    let good = initialize(&service, "2025-06-18").await;
    let gone = initialize(&service, "2025-06-18").await;
    assert_eq!(
        service.handle(delete(&gone)).await.status(),
        StatusCode::NO_CONTENT
    );
    // A request in flight, for the duplicate; a finished stream, for forged ids.
    let _in_flight = service
        .handle(request(
            post(Some(&s06)),
            call(42, "sleep", json!({"ms": 600_000})),
        ))
        .await;
    let mut sse = Sse::new(
        service
            .handle(request(
                post(Some(&s11)),
                call(1, "progress", json!({"steps": 2})),
            ))
            .await,
    );
    sse.rest(10).await;
    let last = sse.last_event_id().to_owned();
    let (stream, index) = last.split_once('_').unwrap();
    let past_end = format!("{stream}_{}", index.parse::<u64>().unwrap() + 1);

    let bad = StatusCode::BAD_REQUEST;
    let t = codes::TRANSPORT_ERROR;
    let one = || Some(Id::from(1));
    let s = Some(s06.as_str());
    let mut oversized = posted(post(s), vec![b' '; LIMIT + 1]);
    oversized
        .headers_mut()
        .insert("content-length", (LIMIT + 1).into());
    let nested = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let mut bad_bytes_id = posted(post(None), ping(1));
    bad_bytes_id.headers_mut().insert(
        "mcp-session-id",
        HeaderValue::from_bytes(b"ab\xffcd").unwrap(),
    );
    let get_with = |id: &str, last: Option<&str>| boxed(get(id, last));
    let cases: Vec<Case> = vec![
        (
            "malformed JSON",
            posted(post(s), "{"),
            bad,
            code::PARSE_ERROR,
            None,
        ),
        (
            "truncated JSON",
            posted(post(s), r#"{"jsonrpc":"2.0","id":1,"meth"#),
            bad,
            code::PARSE_ERROR,
            None,
        ),
        (
            "empty body",
            posted(post(s), ""),
            bad,
            code::PARSE_ERROR,
            None,
        ),
        (
            "invalid UTF-8",
            posted(post(s), &b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}"[..]),
            bad,
            code::PARSE_ERROR,
            None,
        ),
        (
            "nested 10,000 deep",
            posted(post(s), nested),
            bad,
            code::INVALID_REQUEST,
            None,
        ),
        (
            "not JSON-RPC",
            posted(post(s), r#"{"hello":"world"}"#),
            bad,
            code::INVALID_REQUEST,
            None,
        ),
        (
            "jsonrpc 1.0",
            posted(post(s), r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            bad,
            code::INVALID_REQUEST,
            None,
        ),
        (
            "empty batch",
            posted(post(s), "[]"),
            bad,
            code::INVALID_REQUEST,
            None,
        ),
        (
            "batch of numbers",
            posted(post(s), "[1,2]"),
            bad,
            code::INVALID_REQUEST,
            None,
        ),
        (
            "a string",
            posted(post(s), r#""ping""#),
            bad,
            code::INVALID_REQUEST,
            None,
        ),
        (
            "fractional id",
            posted(post(s), r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            bad,
            code::INVALID_REQUEST,
            None,
        ),
        (
            "result and error",
            posted(
                post(s),
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            ),
            bad,
            code::INVALID_REQUEST,
            None,
        ),
        (
            "Accept: JSON only",
            posted(with(post(s), "accept", "application/json"), ping(1)),
            StatusCode::NOT_ACCEPTABLE,
            t,
            None,
        ),
        (
            "no Accept",
            {
                let mut r = posted(post(s), ping(1));
                r.headers_mut().remove("accept");
                r
            },
            StatusCode::NOT_ACCEPTABLE,
            t,
            None,
        ),
        (
            "Content-Type: text/plain",
            posted(with(post(s), "content-type", "text/plain"), ping(1)),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            t,
            None,
        ),
        (
            "no Content-Type",
            {
                let mut r = posted(post(s), ping(1));
                r.headers_mut().remove("content-type");
                r
            },
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            t,
            None,
        ),
        (
            "oversized, declared",
            oversized,
            StatusCode::PAYLOAD_TOO_LARGE,
            t,
            None,
        ),
        (
            "oversized, undeclared",
            posted(post(s), vec![b' '; LIMIT + 1]),
            StatusCode::PAYLOAD_TOO_LARGE,
            t,
            None,
        ),
        (
            "body cut short",
            post(s)
                .body(Truncated(Some(Bytes::from_static(b"{\"jsonrpc\""))))
                .unwrap()
                .map(|b| b.boxed()),
            bad,
            t,
            None,
        ),
        (
            "unknown session",
            posted(post(Some("unknown-session")), ping(1)),
            StatusCode::NOT_FOUND,
            codes::SESSION_NOT_FOUND,
            one(),
        ),
        (
            "terminated session",
            posted(post(Some(&gone)), ping(1)),
            StatusCode::NOT_FOUND,
            codes::SESSION_NOT_FOUND,
            one(),
        ),
        (
            "session id with a space",
            posted(post(Some("a b")), ping(1)),
            bad,
            t,
            None,
        ),
        ("session id not ASCII", bad_bytes_id, bad, t, None),
        (
            "session id too long",
            posted(post(Some(&"x".repeat(200))), ping(1)),
            bad,
            t,
            None,
        ),
        (
            "two session ids",
            posted(post(s).header("mcp-session-id", &good), ping(1)),
            bad,
            t,
            None,
        ),
        (
            "request without a session",
            posted(post(None), ping(1)),
            bad,
            t,
            one(),
        ),
        (
            "notification without a session",
            posted(post(None), note("notifications/initialized")),
            bad,
            t,
            None,
        ),
        (
            "unsupported version",
            posted(
                post(s).header("mcp-protocol-version", "2024-11-05"),
                ping(1),
            ),
            bad,
            t,
            None,
        ),
        (
            "batch in 06",
            posted(post(s), format!("[{},{}]", ping(1), ping(2))),
            bad,
            t,
            None,
        ),
        (
            "batch in 11",
            posted(post(Some(&s11)), format!("[{},{}]", ping(1), ping(2))),
            bad,
            t,
            None,
        ),
        (
            "initialize in a batch",
            posted(
                post(None),
                format!("[{}]", initialize_body(0, "2025-03-26")),
            ),
            bad,
            t,
            None,
        ),
        (
            "initialize with a session",
            posted(post(s), initialize_body(0, "2025-06-18")),
            bad,
            t,
            Some(Id::from(0)),
        ),
        (
            "duplicate id in flight",
            posted(post(s), ping(42)),
            bad,
            t,
            Some(Id::from(42)),
        ),
        (
            "malformed Last-Event-ID",
            get_with(&s11, Some("abc")),
            bad,
            t,
            None,
        ),
        (
            "Last-Event-ID of no stream",
            get_with(&s11, Some("77_0")),
            bad,
            t,
            None,
        ),
        (
            "Last-Event-ID past the end",
            get_with(&s11, Some(&past_end)),
            bad,
            t,
            None,
        ),
        (
            "Last-Event-ID of another session",
            get_with(&s06, Some(&last)),
            bad,
            t,
            None,
        ),
        (
            "Last-Event-ID with NUL-free junk",
            get_with(&s11, Some("0_99999999999999999999999")),
            bad,
            t,
            None,
        ),
        (
            "forbidden Origin",
            posted(post(s).header("origin", "https://evil.example"), ping(1)),
            StatusCode::FORBIDDEN,
            t,
            None,
        ),
        (
            "forbidden Host",
            posted(with(post(s), "host", "evil.example"), ping(1)),
            StatusCode::FORBIDDEN,
            t,
            None,
        ),
        (
            "no Host",
            {
                let mut r = posted(post(s), ping(1));
                r.headers_mut().remove("host");
                *r.uri_mut() = "/mcp".parse().unwrap();
                r
            },
            StatusCode::FORBIDDEN,
            t,
            None,
        ),
        (
            "PUT",
            {
                let mut r = posted(post(s), ping(1));
                *r.method_mut() = Method::PUT;
                r
            },
            StatusCode::METHOD_NOT_ALLOWED,
            t,
            None,
        ),
        (
            "GET without a session",
            {
                let mut r = get_with("x", None);
                r.headers_mut().remove("mcp-session-id");
                r
            },
            bad,
            t,
            None,
        ),
        (
            "GET accepting JSON only",
            {
                let mut r = get_with(&s06, None);
                r.headers_mut()
                    .insert("accept", HeaderValue::from_static("application/json"));
                r
            },
            StatusCode::NOT_ACCEPTABLE,
            t,
            None,
        ),
        (
            "DELETE of no session",
            boxed(delete("unknown-session")),
            StatusCode::NOT_FOUND,
            codes::SESSION_NOT_FOUND,
            None,
        ),
    ];
    assert!(cases.len() >= 30);
    let mut wrong = Vec::new();
    for (n, (what, req, status, code, id)) in cases.into_iter().enumerate() {
        let response = service.handle(req).await;
        if response.status() != status {
            let got = response.status();
            wrong.push(format!(
                "{what}: {got}, want {status}: {:?}",
                body_bytes(response).await
            ));
            continue;
        }
        let (got_code, got_id, message) = refusal(response, status).await;
        if (got_code, &got_id) != (code, &id) {
            wrong.push(format!(
                "{what}: code {got_code} id {got_id:?}, want {code} {id:?}: {message}"
            ));
        }
        // Meanwhile, another session is served as usual.
        let text = format!("after {what}");
        let msgs = call_tool(
            &service,
            &good,
            1000 + n as i64,
            "echo",
            json!({"text": text}),
        )
        .await;
        assert_eq!(result_of(&msgs[0]), crate::app::text(&text), "{what}");
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(service.session_count(), 3);
}
