//! The tools `tools/list` answers with, and the schemas of the 2025-11-25 fixtures: data only,
//! written as the wire shows it.

use serde_json::{Value, json};

use super::modern;

/// The tools, as `tools/list` gives them: those of 2025-11-25, then those of 2026-07-28.
pub(crate) fn tools() -> Value {
    let mut tools = tools_2025();
    if let Value::Array(list) = &mut tools {
        list.extend(modern::tools());
    }
    tools
}

fn tools_2025() -> Value {
    let none = json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str, schema: &Value| json!({"name": name, "description": description, "inputSchema": schema});
    let string_arg = |name: &str, description: &str| json!({"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]});
    json!([
        tool(
            "test_simple_text",
            "Tests simple text content response",
            &none
        ),
        tool("test_image_content", "Tests image content response", &none),
        tool("test_audio_content", "Tests audio content response", &none),
        tool(
            "test_embedded_resource",
            "Tests embedded resource content response",
            &none
        ),
        tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            &none
        ),
        tool(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
            &none
        ),
        tool(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            &none
        ),
        tool(
            "test_error_handling",
            "Tests error response handling",
            &none
        ),
        tool(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection (SEP-1699): the server closes the stream mid-call and sends the result after the client reconnects",
            &none
        ),
        tool(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            &string_arg("prompt", "The prompt to send to the LLM")
        ),
        tool(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            &string_arg("message", "The message to show the user")
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            &none
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            &none
        ),
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106)",
            &json_schema_2020_12()
        ),
    ])
}

/// The input schema of `json_schema_2020_12_tool`: 2020-12 keywords the suite checks are kept.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

/// SEP-1034: a default for every primitive type.
pub(crate) fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
        "required": [],
    })
}

/// SEP-1330: the five kinds of enum.
pub(crate) fn sep1330_schema() -> Value {
    let titled = |kind: &str| {
        json!([
            {"const": "value1", "title": format!("First {kind}")},
            {"const": "value2", "title": format!("Second {kind}")},
            {"const": "value3", "title": format!("Third {kind}")},
        ])
    };
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": titled("Option")},
            "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": titled("Choice")}},
        },
        "required": [],
    })
}
