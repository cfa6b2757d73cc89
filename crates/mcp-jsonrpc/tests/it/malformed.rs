//! A table of malformed and hostile bodies, each with the code it must map to.

use mcp_jsonrpc::{code, parse};

const PARSE: i64 = code::PARSE_ERROR;
const INVALID: i64 = code::INVALID_REQUEST;

/// (body, expected code, a fragment the error message must contain)
const CASES: &[(&str, i64, &str)] = &[
    ("", PARSE, "invalid JSON"),
    ("   \n\t", PARSE, "invalid JSON"),
    ("{", PARSE, "EOF"),
    ("nul", PARSE, "invalid JSON"),
    (
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\"} trailing",
        PARSE,
        "trailing",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}{}",
        PARSE,
        "trailing",
    ),
    ("{'jsonrpc':'2.0'}", PARSE, "key must be a string"),
    ("[{\"jsonrpc\":\"2.0\",\"method\":\"m\"},", PARSE, "EOF"),
    ("{\"jsonrpc\":\"2.0\",\"method\":\"m\\x\"}", PARSE, "escape"),
    (
        "\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"m\"}",
        PARSE,
        "invalid JSON",
    ),
    ("null", INVALID, "JSON-RPC 2.0 message object"),
    ("5", INVALID, "JSON-RPC 2.0 message object"),
    ("\"ping\"", INVALID, "JSON-RPC 2.0 message object"),
    ("true", INVALID, "JSON-RPC 2.0 message object"),
    ("[]", INVALID, "empty batch"),
    ("[1,2]", INVALID, "batch element 0"),
    ("[[]]", INVALID, "batch element 0"),
    ("{}", INVALID, "jsonrpc"),
    ("{\"jsonrpc\":\"2.0\"}", INVALID, "no \\\"method\\\""),
    (
        "{\"jsonrpc\":\"2.0\",\"id\":1}",
        INVALID,
        "no \\\"method\\\"",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\",\"method\":\"m\"}",
        INVALID,
        "duplicate",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"m\"}",
        INVALID,
        "duplicate",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"method\":5}",
        INVALID,
        "invalid type",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"method\":null}",
        INVALID,
        "invalid type",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":5}",
        INVALID,
        "object or an array",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"x\"}",
        INVALID,
        "object or an array",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}",
        INVALID,
        "integer or a string",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551615,\"method\":\"m\"}",
        INVALID,
        "out of range",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}",
        INVALID,
        "invalid type",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"m\"}}",
        INVALID,
        "code",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":5}",
        INVALID,
        "invalid type",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"result\":{}}",
        INVALID,
        "must have an \\\"id\\\"",
    ),
    (
        "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":1,\"message\":\"m\"}}",
        INVALID,
        "must have an \\\"id\\\"",
    ),
    (
        "{\"jsonrpc\":\"2.0 \",\"method\":\"m\"}",
        INVALID,
        "unsupported",
    ),
];

#[test]
fn every_malformed_body_maps_to_its_code_and_says_why() {
    let mut failures = Vec::new();
    for &(body, want, fragment) in CASES {
        match parse(body.as_bytes()) {
            Ok(b) => failures.push(format!("{body:?}: accepted as {b:?}")),
            Err(err) => {
                let obj = err.to_error_object();
                if obj.code != want {
                    failures.push(format!("{body:?}: code {} want {want} ({obj:?})", obj.code));
                }
                let message = serde_json::to_string(&obj.message).unwrap();
                if !message.contains(fragment) {
                    failures.push(format!("{body:?}: message {message} lacks {fragment:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let err = parse(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}").unwrap_err();
    assert_eq!(err.code(), PARSE);
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    let open = "[".repeat(100_000);
    let close = "]".repeat(100_000);
    // A raw payload is skipped over, not built, so its depth costs no stack: it is kept as it is
    // and left to the application, whose own parser has its own limit.
    let deep = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{open}{close}}}"#);
    let body = parse(deep.as_bytes()).unwrap();
    assert_eq!(body.messages().len(), 1);
    // Where the envelope itself is built from deep input, serde_json's depth limit answers.
    let deep = format!(r#"{{"jsonrpc":"2.0","id":{open}{close},"method":"m"}}"#);
    assert!(parse(deep.as_bytes()).is_err());
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse(deep.as_bytes()).is_err());
}
