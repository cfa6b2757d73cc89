//! Agreement with the texts themselves: JSON-RPC 2.0 for what a message is, RFC 8259 for what
//! JSON is. Each test pins one place where a parser could drift from them.

use mcp_jsonrpc::{Body, Message, code, parse};

const INVALID: i64 = code::INVALID_REQUEST;

fn code_of(body: &[u8]) -> i64 {
    match parse(body) {
        Ok(accepted) => panic!(
            "{:?} accepted as {accepted:?}",
            String::from_utf8_lossy(body)
        ),
        Err(error) => error.code(),
    }
}

#[test]
fn error_member_given_as_an_array_is_an_invalid_request() {
    // JSON-RPC 2.0 section 5: "the error member MUST be an Object". serde's derived visitor would
    // also take the members in order from an array.
    assert_eq!(
        code_of(br#"{"jsonrpc":"2.0","id":1,"error":[-32000,"m"]}"#),
        INVALID
    );
    assert_eq!(
        code_of(br#"{"jsonrpc":"2.0","id":1,"error":[-32000,"m",{"d":1}]}"#),
        INVALID
    );
    assert_eq!(
        code_of(br#"[{"jsonrpc":"2.0","id":1,"error":[-32000,"m"]}]"#),
        INVALID
    );
}

#[test]
fn error_object_members_are_checked_like_the_envelopes() {
    for bad in [
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","message":"n"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":null}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":null}"#,
    ] {
        assert_eq!(code_of(bad.as_bytes()), INVALID, "{bad}");
    }
    // Members beyond code, message and data are not forbidden, and are ignored.
    let body = parse(br#"{"jsonrpc":"2.0","id":1,"error":{"x":[],"message":"m","code":7}}"#);
    let Ok(Body::Single(Message::Response(response))) = body else {
        panic!("{body:?}")
    };
    assert_eq!(response.result().unwrap_err().code, 7);
}
