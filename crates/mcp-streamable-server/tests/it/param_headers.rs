//! M8: the `Mcp-Param-*` headers of a per-request `tools/call`, checked against its arguments
//! by the tools' declarations.

use http::StatusCode;
use mcp_jsonrpc::Id;
use mcp_streamable_server::{Config, ToolHeaders, codes};
use serde_json::{Value, json};

use crate::harness::*;
use crate::modern_app::*;

/// `Mcp-Param-*` headers to send: each name (after the prefix) and raw value.
type Params<'a> = &'a [(&'a str, &'a [u8])];

/// `echo` mirrors `region` (a string) and `priority` (an integer); `query` is not mirrored.
fn declared() -> ToolHeaders {
    let tools = json!({"tools": [{"name": "echo", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "query": {"type": "string"},
    }}}]});
    ToolHeaders::from_tools_list(&tools).unwrap()
}

/// A `tools/call` of `tool` with `arguments` and the `Mcp-Param-*` headers `params`.
fn call(
    id: i64,
    tool: &str,
    arguments: Value,
    params: Params<'_>,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut builder = modern("tools/call").header("mcp-name", tool);
    for (name, value) in params {
        builder = builder.header(format!("mcp-param-{name}"), *value);
    }
    let params = json!({"name": tool, "arguments": arguments});
    request(builder, body(id, "tools/call", params))
}

#[tokio::test]
async fn m8_mirrored_arguments_that_match_reach_the_application() {
    let (service, _log) = logged(Config::default().tool_headers(declared()));
    let cases: &[(&str, Value, Params<'_>)] = &[
        (
            "literal",
            json!({"region": "eu", "priority": 2}),
            &[("Region", b"eu"), ("Priority", b"2")],
        ),
        (
            "base64",
            json!({"region": "Hello"}),
            &[("region", b"=?base64?SGVsbG8=?=")],
        ),
        (
            "spaces around",
            json!({"region": "eu"}),
            &[("REGION", b"  eu\t")],
        ),
        (
            "no prefix is literal",
            json!({"region": "SGVsbG8="}),
            &[("Region", b"SGVsbG8=")],
        ),
        (
            "no suffix is literal",
            json!({"region": "=?base64?SGVsbG8="}),
            &[("Region", b"=?base64?SGVsbG8=")],
        ),
        ("null omitted", json!({"region": null, "query": "q"}), &[]),
        ("nothing mirrored", json!({}), &[]),
        ("no arguments", Value::Null, &[]),
    ];
    for (i, (case, arguments, params)) in cases.iter().enumerate() {
        let response = service
            .handle(call(i as i64, "echo", arguments.clone(), params))
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{case}");
        let result = json_result(response).await;
        assert_eq!(result["name"], "echo", "{case}");
    }
}

#[tokio::test]
async fn m8_mirrored_arguments_that_do_not_match_are_400_with_32020_naming_the_header() {
    let (service, mut log) = logged(Config::default().tool_headers(declared()));
    let cases: &[(&str, &str, Value, Params<'_>, &str)] = &[
        (
            "missing",
            "echo",
            json!({"region": "eu"}),
            &[],
            "mcp-param-region",
        ),
        (
            "for an absent value",
            "echo",
            json!({}),
            &[("Region", b"eu")],
            "mcp-param-region",
        ),
        (
            "for a null value",
            "echo",
            json!({"region": null}),
            &[("Region", b"eu")],
            "mcp-param-region",
        ),
        (
            "another value",
            "echo",
            json!({"region": "eu"}),
            &[("Region", b"us")],
            "mcp-param-region",
        ),
        (
            "case of the value",
            "echo",
            json!({"region": "eu"}),
            &[("Region", b"EU")],
            "mcp-param-region",
        ),
        (
            "bad padding",
            "echo",
            json!({"region": "Hello"}),
            &[("Region", b"=?base64?SGVsbG8?=")],
            "mcp-param-region",
        ),
        (
            "bad alphabet",
            "echo",
            json!({"region": "Hello"}),
            &[("Region", b"=?base64?SGVs!!!bG8=?=")],
            "mcp-param-region",
        ),
        (
            "not ASCII",
            "echo",
            json!({"region": "Hé"}),
            &[("Region", b"H\xc3\xa9")],
            "mcp-param-region",
        ),
        (
            "twice",
            "echo",
            json!({"region": "eu"}),
            &[("Region", b"eu"), ("region", b"eu")],
            "mcp-param-region",
        ),
        (
            "an integer differs",
            "echo",
            json!({"priority": 2}),
            &[("Priority", b"3")],
            "mcp-param-priority",
        ),
        (
            "not declared",
            "echo",
            json!({"query": "q"}),
            &[("Query", b"q")],
            "mcp-param-query",
        ),
        (
            "tool not declared",
            "other",
            json!({"region": "eu"}),
            &[("Region", b"eu")],
            "mcp-param-region",
        ),
    ];
    for (i, (case, tool, arguments, params, header)) in cases.iter().enumerate() {
        let id = 100 + i as i64;
        let response = service
            .handle(call(id, tool, arguments.clone(), params))
            .await;
        let (code, got, message) = refusal(response, StatusCode::BAD_REQUEST).await;
        assert_eq!(
            (code, got),
            (codes::HEADER_MISMATCH, Some(Id::from(id))),
            "{case}"
        );
        assert!(message.contains(header), "{case}: {message}");
    }
    // None of them reached the application.
    assert!(log.try_recv().is_err());
}

#[tokio::test]
async fn m8_unchecked_without_declarations_and_updated_while_serving() {
    // Off by default: the application gets what the client sent.
    let (service, _log) = logged(Config::default());
    let response = service
        .handle(call(
            1,
            "echo",
            json!({"region": "eu"}),
            &[("Region", b"us")],
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    // Clones share one table: a tool declared later is checked from then on.
    let tools = ToolHeaders::new();
    let (service, _log) = logged(Config::default().tool_headers(tools.clone()));
    let mismatched = || call(2, "echo", json!({"region": "eu"}), &[]);
    assert_eq!(service.handle(mismatched()).await.status(), StatusCode::OK);
    let schema = json!({"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
    tools.set("echo", &schema).unwrap();
    let response = service.handle(mismatched()).await;
    let (code, _, _) = refusal(response, StatusCode::BAD_REQUEST).await;
    assert_eq!(code, codes::HEADER_MISMATCH);
    tools.remove("echo");
    assert_eq!(service.handle(mismatched()).await.status(), StatusCode::OK);
}

#[test]
fn m8_a_tools_list_with_an_invalid_declaration_is_refused() {
    let tools = json!({"tools": [
        {"name": "fine", "inputSchema": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}},
        {"name": "bad", "inputSchema": {"properties": {"b": {"type": "number", "x-mcp-header": "B"}}}},
    ]});
    let err = ToolHeaders::from_tools_list(&tools).unwrap_err();
    assert_eq!(err.tool, "bad");
    assert!(err.to_string().contains("\"B\""), "{err}");
}
