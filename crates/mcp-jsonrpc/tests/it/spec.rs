//! Agreement with the texts themselves: JSON-RPC 2.0 for what a message is, RFC 8259 for what
//! JSON is. Each test pins one place where a parser could drift from them, most of them found by
//! the differential fuzzer (`fuzz.rs`).

use mcp_jsonrpc::{Body, Id, Message, code, parse};

const PARSE: i64 = code::PARSE_ERROR;
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

#[test]
fn invalid_utf8_in_an_unknown_member_is_a_parse_error() {
    // RFC 8259 section 8.1: JSON text exchanged between systems must be UTF-8. The same byte is
    // refused in `params`; an ignored member is no different.
    assert_eq!(
        code_of(b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":\"\xff\"}"),
        PARSE
    );
    assert_eq!(
        code_of(b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":\"\xff\"}}"),
        PARSE
    );
    assert_eq!(
        code_of(b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"\xc3\":1}"),
        PARSE
    );
    assert_eq!(
        code_of(b"[{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":\"\xed\xa0\x80\"}]"),
        PARSE
    );
}

#[test]
fn invalid_utf8_in_a_body_that_is_not_a_message_is_a_parse_error() {
    // Not UTF-8 is not JSON text, so -32700 is due before any question of being a message.
    assert_eq!(code_of(b"{\"hello\":\"\xff\"}"), PARSE);
    assert_eq!(code_of(b"{\"jsonrpc\":\"1.0\",\"x\":\"\xfe\"}"), PARSE);
    assert_eq!(code_of(b"\"\xff\""), PARSE);
    assert_eq!(code_of(b"[1,\"\xff\"]"), PARSE);
}

#[test]
fn lone_surrogate_escapes_are_json_but_not_a_message() {
    // RFC 8259 section 8.2: the grammar allows "\ud800" alone. It is JSON, so not -32700; where
    // it must become text (the method, a string id, the version, a member name, which is what a
    // message is read by) it cannot, so the body is not a message. In a payload or the value of
    // an unknown member it is kept as it came or skipped.
    for bad in [
        r#"{"jsonrpc":"2.0","method":"\ud800"}"#,
        r#"{"jsonrpc":"2.0","method":"m","\ud800":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","\udbff":1}}"#,
        r#"{"jsonrpc":"2.0","id":"\udc00x","method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"\ud800\ud800"}}"#,
        r#"[{"jsonrpc":"2.0","method":"\udfff"}]"#,
    ] {
        assert_eq!(code_of(bad.as_bytes()), INVALID, "{bad}");
    }
    let body = parse(br#"{"jsonrpc":"2.0","method":"m","params":["\ud800"],"x":"\udc00"}"#);
    let Ok(Body::Single(Message::Notification(n))) = body else {
        panic!("{body:?}")
    };
    assert_eq!(n.params.unwrap().get(), r#"["\ud800"]"#);
    // A pair is one character, as anywhere.
    let body = parse(br#"{"jsonrpc":"2.0","method":"\ud83d\ude00"}"#).unwrap();
    assert_eq!(body.messages()[0].method(), Some("\u{1F600}"));
}

#[test]
fn numbers_beyond_what_an_id_holds_are_json_but_not_a_message() {
    // RFC 8259 section 6 puts no bound on a number; an id out of range is a bad id, not bad JSON.
    for bad in ["1e400", "-1e400", "123456789012345678901234567890"] {
        let json = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"m"}}"#);
        assert_eq!(code_of(json.as_bytes()), INVALID, "{json}");
    }
    let json = br#"{"jsonrpc":"2.0","method":"m","params":[1e400]}"#;
    assert_eq!(parse(json).unwrap().messages()[0].method(), Some("m"));
}

#[test]
fn version_must_be_exactly_the_string_2_0() {
    for bad in [
        r#""2""#,
        r#""2.00""#,
        r#""2.0 ""#,
        r#"" 2.0""#,
        "2",
        r#"["2.0"]"#,
    ] {
        let json = format!(r#"{{"jsonrpc":{bad},"method":"m"}}"#);
        assert_eq!(code_of(json.as_bytes()), INVALID, "{json}");
    }
    // The string is compared once its escapes are read, as JSON strings are.
    let body = parse(br#"{"jsonrpc":"2\u002e0","method":"m"}"#).unwrap();
    assert_eq!(body.messages()[0].method(), Some("m"));
}

#[test]
fn ids_are_strings_or_integral_numbers_without_fraction_or_exponent() {
    // JSON-RPC 2.0 allows fractional ids but says they SHOULD NOT be sent; MCP forbids them,
    // and null request ids, outright. `1.0` and `1e0` are integers written as fractions. `-0`
    // is refused too: it could only be answered as `0`, which a peer matching ids as written
    // would not recognise.
    for bad in [
        "1.0", "1e0", "0.5", "-0.0", "-0", "null", "{}", "[]", "true",
    ] {
        let json = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"m"}}"#);
        assert_eq!(code_of(json.as_bytes()), INVALID, "{json}");
    }
    for (good, id) in [
        ("0", Id::from(0)),
        ("-1", Id::from(-1)),
        (r#""""#, Id::from("")),
    ] {
        let json = format!(r#"{{"jsonrpc":"2.0","id":{good},"method":"m"}}"#);
        let body = parse(json.as_bytes()).unwrap();
        assert_eq!(body.messages()[0].request_id(), Some(&id), "{json}");
    }
}

#[test]
fn duplicate_members_are_refused_whatever_their_spelling() {
    // RFC 8259 section 4: names SHOULD be unique, and receivers of duplicates disagree on what
    // they mean, so a member the message is made of may not come twice, even escaped.
    for bad in [
        r#"{"jsonrpc":"2.0","method":"m","m\u0065thod":"n"}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":[],"params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"result":2}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"error":{"code":1,"message":"m"}}"#,
    ] {
        assert_eq!(code_of(bad.as_bytes()), INVALID, "{bad}");
    }
    // Members the message is not made of are ignored, repeated or not.
    let body = parse(br#"{"jsonrpc":"2.0","method":"m","x":1,"x":2}"#).unwrap();
    assert_eq!(body.messages()[0].method(), Some("m"));
}

#[test]
fn a_leading_byte_order_mark_is_a_parse_error() {
    // RFC 8259 section 8.1: a sender MUST NOT add one, and a parser MAY ignore it; this one does
    // not, so that what it accepts is exactly JSON text.
    assert_eq!(
        code_of(b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"m\"}"),
        PARSE
    );
    assert_eq!(
        code_of(b"\xef\xbb\xbf[{\"jsonrpc\":\"2.0\",\"method\":\"m\"}]"),
        PARSE
    );
}

#[test]
fn a_message_has_exactly_one_kind() {
    for bad in [
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#,
        r#"{"jsonrpc":"2.0","method":"m","error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
    ] {
        assert_eq!(code_of(bad.as_bytes()), INVALID, "{bad}");
    }
    // A result may be any JSON value, null included.
    let body = parse(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap();
    let Message::Response(response) = &body.messages()[0] else {
        panic!("{body:?}")
    };
    assert_eq!(response.result().unwrap().get(), "null");
}
