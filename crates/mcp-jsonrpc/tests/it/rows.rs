//! Rows J1-J4 of SPEC.md, one test (or more) each.

use mcp_jsonrpc::{Body, Id, Message, code, parse};

fn single(json: &str) -> Message {
    match parse(json.as_bytes()) {
        Ok(Body::Single(m)) => m,
        other => panic!("{json}: {other:?}"),
    }
}

#[test]
fn j1_request_has_id_and_method() {
    let Message::Request(r) = single(r#"{"jsonrpc":"2.0","id":"a","method":"m","params":[1]}"#)
    else {
        panic!("not a request")
    };
    assert_eq!(r.id, Id::from("a"));
    assert_eq!(r.method, "m");
    assert_eq!(r.params.unwrap().get(), "[1]");
}

#[test]
fn j1_notification_has_method_and_no_id() {
    let m = single(r#"{"method":"notifications/progress","jsonrpc":"2.0","params":{"p":1}}"#);
    assert!(matches!(m, Message::Notification(ref n) if n.method == "notifications/progress"));
    assert_eq!(m.request_id(), None);
}

#[test]
fn j1_response_has_id_and_exactly_one_of_result_or_error() {
    let ok = single(r#"{"jsonrpc":"2.0","id":3,"result":{"x":true}}"#);
    let Message::Response(ok) = ok else { panic!() };
    assert_eq!(ok.id(), Some(&Id::from(3)));
    assert_eq!(ok.result().unwrap().get(), r#"{"x":true}"#);

    let err = single(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope"}}"#);
    let Message::Response(err) = err else {
        panic!()
    };
    assert_eq!(err.result().unwrap_err().code, code::METHOD_NOT_FOUND);

    for both in [
        r#"{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":3}"#,
    ] {
        assert_eq!(
            parse(both.as_bytes()).unwrap_err().code(),
            code::INVALID_REQUEST,
            "{both}"
        );
    }
}

#[test]
fn j1_version_must_be_2_0() {
    for bad in [
        r#"{"id":1,"method":"m"}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
        r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#,
        r#"{"jsonrpc":null,"id":1,"method":"m"}"#,
    ] {
        let err = parse(bad.as_bytes()).unwrap_err();
        assert_eq!(err.code(), code::INVALID_REQUEST, "{bad}");
    }
}

#[test]
fn j1_ids_are_strings_or_integers() {
    assert_eq!(
        single(r#"{"jsonrpc":"2.0","id":-7,"method":"m"}"#).request_id(),
        Some(&Id::from(-7))
    );
    for bad in ["1.5", "true", "{}", "[1]", "1e2"] {
        let json = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"m"}}"#);
        assert_eq!(
            parse(json.as_bytes()).unwrap_err().code(),
            code::INVALID_REQUEST,
            "{json}"
        );
    }
}

#[test]
fn j1_null_id_only_in_an_error_response() {
    let m = single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
    assert!(matches!(m, Message::Response(ref r) if r.id().is_none() && r.is_error()));
    for bad in [
        r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
    ] {
        assert_eq!(
            parse(bad.as_bytes()).unwrap_err().code(),
            code::INVALID_REQUEST,
            "{bad}"
        );
    }
}

#[test]
fn j2_kind_is_decided_by_members_whatever_their_order() {
    let orders = [
        r#"{"params":{},"method":"m","id":1,"jsonrpc":"2.0"}"#,
        r#"{"id":1,"jsonrpc":"2.0","params":{},"method":"m"}"#,
    ];
    for json in orders {
        assert!(single(json).is_request(), "{json}");
    }
    // A member that would make the kind ambiguous is an error, not a guess.
    let err = parse(br#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#).unwrap_err();
    assert!(err.to_error_object().message.contains("both"), "{err}");
}

#[test]
fn j2_payloads_stay_raw() {
    // Numbers beyond f64 precision, key order and spacing all survive untouched.
    let json = r#"{"jsonrpc":"2.0","id":1,"result":{"b":12345678901234567890123, "a" :[ 1 ]}}"#;
    let Message::Response(r) = single(json) else {
        panic!()
    };
    assert_eq!(
        r.result().unwrap().get(),
        r#"{"b":12345678901234567890123, "a" :[ 1 ]}"#
    );

    let json = r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"z":[0.10]}}}"#;
    let Message::Response(r) = single(json) else {
        panic!()
    };
    assert_eq!(
        r.result().unwrap_err().data.as_ref().unwrap().get(),
        r#"{"z":[0.10]}"#
    );
}

#[test]
fn j3_a_body_is_one_message_or_a_non_empty_batch() {
    let body =
        parse(br#" [ {"jsonrpc":"2.0","method":"a"}, {"jsonrpc":"2.0","id":2,"method":"b"} ] "#)
            .unwrap();
    assert!(body.is_batch());
    assert_eq!(body.messages().len(), 2);
    assert_eq!(body.messages()[1].method(), Some("b"));
    let methods: Vec<_> = body
        .clone()
        .into_iter()
        .map(|m| m.method().map(str::to_owned))
        .collect();
    assert_eq!(methods, [Some("a".to_owned()), Some("b".to_owned())]);
    assert_eq!(body.into_iter().len(), 2);

    let single = parse(br#"{"jsonrpc":"2.0","method":"a"}"#).unwrap();
    let mut messages = single.into_iter();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages
            .next()
            .and_then(|m| m.method().map(str::to_owned))
            .as_deref(),
        Some("a")
    );
    assert!(messages.next().is_none());

    let err = parse(b"[]").unwrap_err();
    assert_eq!(err.code(), code::INVALID_REQUEST);
    assert!(err.to_string().contains("empty batch"), "{err}");
    assert_eq!(
        parse(b" [ \n ] ").unwrap_err().code(),
        code::INVALID_REQUEST
    );
}

#[test]
fn j3_an_invalid_batch_element_is_named() {
    let err = parse(br#"[{"jsonrpc":"2.0","method":"a"}, 5]"#).unwrap_err();
    assert_eq!(err.code(), code::INVALID_REQUEST);
    assert_eq!(err.batch_index(), Some(1));
    assert!(err.to_string().contains("element 1"), "{err}");
}

#[test]
fn j4_malformed_json_is_a_parse_error_with_null_id() {
    let err = parse(br#"{"jsonrpc":"2.0","id":1,"method":"m""#).unwrap_err();
    assert_eq!(err.code(), code::PARSE_ERROR);
    assert!(err.is_syntax());
    let resp = err.to_response();
    assert_eq!(resp.id(), None);
    assert_eq!(
        String::from_utf8(resp.to_vec()).unwrap(),
        format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32700,"message":{}}}}}"#,
            serde_json::to_string(&resp.result().unwrap_err().message).unwrap()
        )
    );
}

#[test]
fn j4_valid_json_that_is_not_a_message_is_an_invalid_request_with_null_id() {
    let err = parse(br#"{"hello":"world"}"#).unwrap_err();
    assert_eq!(err.code(), code::INVALID_REQUEST);
    assert!(!err.is_syntax());
    assert_eq!(err.to_response().id(), None);
    // The message says what is missing, for the person who has to fix the peer.
    assert!(err.to_error_object().message.contains("jsonrpc"), "{err}");
}

#[test]
fn j4_a_data_error_before_a_syntax_error_is_still_a_parse_error() {
    // The bad version is seen first, but the body is not JSON at all.
    let err = parse(br#"{"jsonrpc":"1.0", oops"#).unwrap_err();
    assert_eq!(err.code(), code::PARSE_ERROR);
}

#[test]
fn helpers_find_initialize_and_request_ids() {
    let init = single(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
    assert!(init.is_initialize());
    assert_eq!(init.request_id(), Some(&Id::from(0)));
    let note = single(r#"{"jsonrpc":"2.0","method":"initialize"}"#);
    assert!(
        !note.is_initialize(),
        "a notification named initialize is not the request"
    );
}
