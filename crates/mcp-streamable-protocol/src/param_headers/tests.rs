use serde_json::json;

use super::*;

fn tool(properties: Value) -> Result<ParamHeaders, InvalidDeclaration> {
    ParamHeaders::from_input_schema(&json!({"type": "object", "properties": properties}))
}

fn request(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            HeaderName::try_from(*name).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

fn region() -> ParamHeaders {
    tool(json!({
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "query": {"type": "string"},
    }))
    .unwrap()
}

#[test]
fn declarations_are_read_through_properties() {
    let nested = tool(json!({
        "target": {"type": "object", "properties": {
            "zone": {"type": "string", "x-mcp-header": "Zone"},
        }},
    }))
    .unwrap();
    let param = nested.iter().next().unwrap();
    assert_eq!(param.path, ["target", "zone"]);
    assert_eq!(param.header, "mcp-param-zone");
    assert_eq!(param.kind, ParamType::String);
    assert!(tool(json!({"q": {"type": "string"}})).unwrap().is_empty());
    assert!(
        ParamHeaders::from_input_schema(&json!({}))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn invalid_declarations_invalidate_the_tool() {
    let bad = |properties: Value| tool(properties).unwrap_err();
    let on = |kind: &str, name: &str| json!({"v": {"type": kind, "x-mcp-header": name}});
    for name in ["", "My Region", "Region:Primary", "Région", "Region\t1"] {
        assert!(
            matches!(bad(on("string", name)), InvalidDeclaration::BadName(_)),
            "{name:?}"
        );
    }
    assert!(matches!(
        bad(json!({"v": {"type": "string", "x-mcp-header": 7}})),
        InvalidDeclaration::BadName(_)
    ));
    for kind in ["object", "array", "null", "number"] {
        assert!(
            matches!(bad(on(kind, "V")), InvalidDeclaration::NotPrimitive(_)),
            "{kind}"
        );
    }
    for (a, b) in [("Region", "Region"), ("MyField", "myfield")] {
        let twice = json!({
            "f1": {"type": "string", "x-mcp-header": a},
            "f2": {"type": "string", "x-mcp-header": b},
        });
        assert_eq!(bad(twice), InvalidDeclaration::Duplicate(b.to_owned()));
    }
    let under_items = json!({"list": {"type": "array",
        "items": {"type": "string", "x-mcp-header": "Item"}}});
    assert_eq!(bad(under_items), InvalidDeclaration::Unreachable);
    let under_any_of = ParamHeaders::from_input_schema(&json!({"anyOf": [
        {"properties": {"v": {"type": "string", "x-mcp-header": "V"}}},
    ]}));
    assert_eq!(under_any_of.unwrap_err(), InvalidDeclaration::Unreachable);
}

#[test]
fn a_client_mirrors_present_arguments_encoded_when_they_must_be() {
    let headers = region().headers_for(&json!({
        "region": "  eu ", "priority": 3, "verbose": null, "query": "q",
    }));
    // Ordered by name: serde_json keeps object keys sorted unless a crate of the build asks for
    // their order of insertion.
    let mut text: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
        .collect();
    text.sort();
    assert_eq!(
        text,
        [
            ("mcp-param-priority", "3"),
            ("mcp-param-region", "=?base64?ICBldSA=?="),
        ]
    );
    let flag = region().headers_for(&json!({"verbose": false, "region": "日本"}));
    let value = |name: &str| &flag.iter().find(|(n, _)| n == name).unwrap().1;
    assert_eq!(value("mcp-param-region"), "=?base64?5pel5pys?=");
    assert_eq!(value("mcp-param-verbose"), "false");
    for odd in ["a\r\nb", "\tlead", "ctl\u{1}"] {
        let value = &region().headers_for(&json!({"region": odd}))[0].1;
        assert_eq!(decode_header_value(value).unwrap(), odd);
    }
}

#[test]
fn a_server_accepts_headers_that_match() {
    let args = json!({"region": "Hello", "priority": 2, "query": "q"});
    let ok = [
        request(&[("mcp-param-region", "Hello"), ("mcp-param-priority", "2")]),
        request(&[
            ("Mcp-Param-Region", "=?base64?SGVsbG8=?="),
            ("MCP-PARAM-PRIORITY", " 2 "),
        ]),
    ];
    for headers in ok {
        assert_eq!(region().check(&headers, Some(&args)), Ok(()));
    }
    // Without the markers, base64 is a literal value.
    let literal = json!({"region": "SGVsbG8="});
    let headers = request(&[("mcp-param-region", "SGVsbG8=")]);
    assert_eq!(region().check(&headers, Some(&literal)), Ok(()));
    let half = json!({"region": "=?base64?SGVsbG8="});
    let headers = request(&[("mcp-param-region", "=?base64?SGVsbG8=")]);
    assert_eq!(region().check(&headers, Some(&half)), Ok(()));
    assert_eq!(region().check(&HeaderMap::new(), None), Ok(()));
}

#[test]
fn a_server_refuses_headers_that_do_not_match() {
    let args = json!({"region": "Hello"});
    let header = HeaderName::from_static("mcp-param-region");
    let check = |pairs: &[(&str, &str)], args: &Value| region().check(&request(pairs), Some(args));
    assert_eq!(
        check(&[], &args),
        Err(ParamMismatch::Missing(header.clone()))
    );
    assert_eq!(
        check(&[("mcp-param-region", "Hello")], &json!({"region": null})),
        Err(ParamMismatch::Unexpected(header.clone()))
    );
    assert_eq!(
        check(&[("mcp-param-region", "Bye")], &args),
        Err(ParamMismatch::Differs(header.clone()))
    );
    for bad in ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?="] {
        assert!(matches!(
            check(&[("mcp-param-region", bad)], &args),
            Err(ParamMismatch::Unreadable(
                _,
                crate::DecodeError::InvalidBase64
            ))
        ));
    }
    assert_eq!(
        check(
            &[("mcp-param-region", "Hello"), ("mcp-param-region", "Hello")],
            &args
        ),
        Err(ParamMismatch::Repeated(header.clone()))
    );
    assert_eq!(
        check(
            &[("mcp-param-region", "Hello"), ("mcp-param-query", "q")],
            &args
        ),
        Err(ParamMismatch::Undeclared(HeaderName::from_static(
            "mcp-param-query"
        )))
    );
    let mut raw = HeaderMap::new();
    raw.insert(
        header.clone(),
        HeaderValue::from_bytes(b"H\xc3\xa9").unwrap(),
    );
    assert!(matches!(
        region().check(&raw, Some(&json!({"region": "Hé"}))),
        Err(ParamMismatch::Unreadable(
            _,
            crate::DecodeError::NotVisibleAscii
        ))
    ));
}
