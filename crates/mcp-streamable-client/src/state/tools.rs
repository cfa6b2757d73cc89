//! What the client learnt of the tools' `Mcp-Param-*` declarations (M8, SEP-2243): read from
//! the `tools/list` results it carries, used to add the headers to each `tools/call`.

use std::collections::{HashMap, HashSet};

use http::{HeaderName, HeaderValue};
use mcp_jsonrpc::{Id, RawValue, Response, to_raw_value};
use mcp_streamable_protocol::param_headers::ParamHeaders;
use serde_json::Value;

/// How many tools' declarations a connection remembers. A tool listed past it is not
/// remembered: its calls carry no `Mcp-Param-*` header, and a server that wants them refuses
/// them (-32020), which the application reads. Tens of thousands of tools would be a server
/// out of the ordinary; the cap keeps one that lists without end from growing the client.
pub(crate) const MAX_TOOLS: usize = 4096;

/// How many `tools/list` requests of a connection may wait for their results: as many as
/// requests in flight could be, bounded so that ids whose response never comes cannot pile up.
const MAX_LISTS: usize = 1024;

/// The declarations of the tools listed so far, and the `tools/list` requests waiting for
/// their results.
#[derive(Debug, Default)]
pub(crate) struct Tools {
    declared: HashMap<String, ParamHeaders>,
    lists: HashSet<Id>,
    /// The transport's own `tools/list` requests so far, which number their ids.
    relists: u64,
}

/// A tool's name and arguments, read from the params of a `tools/call`.
#[derive(serde::Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(default)]
    arguments: Value,
}

impl Tools {
    /// The result of the request `id` is a `tools/list` result to learn from.
    pub(crate) fn expect_list(&mut self, id: &Id) {
        if self.lists.len() < MAX_LISTS {
            self.lists.insert(id.clone());
        }
    }

    /// The number of the transport's next own `tools/list`.
    pub(crate) fn next_list(&mut self) -> u64 {
        self.relists += 1;
        self.relists
    }

    /// The request `id` will get no result (its sending failed).
    pub(crate) fn forget_list(&mut self, id: &Id) {
        self.lists.remove(id);
    }

    /// Whether a response is awaited for a `tools/list` request under `id`; once only.
    pub(crate) fn take_list(&mut self, id: &Id) -> bool {
        !self.lists.is_empty() && self.lists.remove(id)
    }

    /// The `Mcp-Param-*` headers of a `tools/call` with `params`: none for a tool not listed
    /// yet, or listed without declarations.
    pub(crate) fn headers_for(&self, params: Option<&RawValue>) -> Vec<(HeaderName, HeaderValue)> {
        if self.declared.is_empty() {
            return Vec::new();
        }
        let Some(call) = params.and_then(|p| serde_json::from_str::<Call<'_>>(p.get()).ok()) else {
            return Vec::new();
        };
        match self.declared.get(call.name.as_ref()) {
            Some(tool) => tool.headers_for(&call.arguments),
            None => Vec::new(),
        }
    }

    /// Learns the declarations of the tools a `tools/list` `response` lists, and returns it
    /// without the tools whose declarations are invalid: a client must not call them. An
    /// error, or a result not shaped as a tools list, passes as it is.
    pub(crate) fn learn(&mut self, response: Response) -> Response {
        let Ok(result) = response.result() else {
            return response;
        };
        let Ok(mut result) = serde_json::from_str::<Value>(result.get()) else {
            return response;
        };
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
            return response;
        };
        let before = tools.len();
        tools.retain(|tool| self.learn_tool(tool));
        if tools.len() == before {
            return response;
        }
        let id = response.id().cloned();
        match (id, to_raw_value(&result)) {
            (Some(id), Ok(raw)) => Response::success(id, raw),
            _ => response,
        }
    }

    /// Remembers one listed tool's declarations; false when they are invalid.
    fn learn_tool(&mut self, tool: &Value) -> bool {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            return true;
        };
        let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
        match ParamHeaders::from_input_schema(schema) {
            Ok(headers) => {
                self.remember(name, headers);
                true
            }
            Err(why) => {
                tracing::warn!(tool = name, %why, "tool left out: invalid x-mcp-header");
                self.declared.remove(name);
                false
            }
        }
    }

    fn remember(&mut self, name: &str, headers: ParamHeaders) {
        if let Some(known) = self.declared.get_mut(name) {
            *known = headers;
        } else if headers.is_empty() {
            // Nothing to mirror: a tool absent from the table calls without headers alike.
        } else if self.declared.len() < MAX_TOOLS {
            self.declared.insert(name.to_owned(), headers);
        } else {
            tracing::warn!(tool = name, "too many tools to remember their x-mcp-header");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw(value: Value) -> Box<RawValue> {
        to_raw_value(&value).unwrap()
    }

    fn listed(tools: Value) -> Response {
        Response::success(Id::from(1), raw(json!({"tools": tools})))
    }

    fn names(response: &Response) -> Vec<String> {
        let result: Value = serde_json::from_str(response.result().unwrap().get()).unwrap();
        result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn region(header: &str) -> Value {
        json!({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": header}}})
    }

    #[test]
    fn m8_invalid_tools_are_left_out_and_valid_ones_remembered() {
        let mut tools = Tools::default();
        let response = tools.learn(listed(json!([
            {"name": "good", "inputSchema": region("Region")},
            {"name": "bad", "inputSchema": region("My Region")},
            {"name": "plain", "inputSchema": {"type": "object"}},
        ])));
        assert_eq!(names(&response), ["good", "plain"]);
        let call = raw(json!({"name": "good", "arguments": {"r": "Hello, 世界"}}));
        let headers = tools.headers_for(Some(&call));
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[0].0, "mcp-param-region");
        assert_eq!(headers[0].1, "=?base64?SGVsbG8sIOS4lueVjA==?=");
        let unknown = raw(json!({"name": "bad", "arguments": {"r": "x"}}));
        assert!(tools.headers_for(Some(&unknown)).is_empty());
    }

    #[test]
    fn m8_a_relist_replaces_the_declarations() {
        let mut tools = Tools::default();
        tools.learn(listed(json!([{"name": "t", "inputSchema": region("A")}])));
        tools.learn(listed(json!([{"name": "t", "inputSchema": region("B")}])));
        let call = raw(json!({"name": "t", "arguments": {"r": "x"}}));
        assert_eq!(tools.headers_for(Some(&call))[0].0, "mcp-param-b");
        // Declared invalid since: forgotten, and left out.
        let response = tools.learn(listed(json!([{"name": "t", "inputSchema": region("")}])));
        assert!(names(&response).is_empty());
        assert!(tools.headers_for(Some(&call)).is_empty());
    }

    #[test]
    fn m8_what_is_not_a_tools_list_passes_unchanged() {
        let mut tools = Tools::default();
        let error = Response::error(Some(Id::from(1)), mcp_jsonrpc::ErrorObject::new(-1, "x"));
        assert!(tools.learn(error).is_error());
        let odd = Response::success(Id::from(2), raw(json!({"tools": 3})));
        assert_eq!(tools.learn(odd).result().unwrap().get(), r#"{"tools":3}"#);
        assert!(tools.headers_for(None).is_empty());
    }

    #[test]
    fn m8_tools_past_the_cap_are_not_remembered() {
        let mut tools = Tools::default();
        let many: Vec<Value> = (0..=MAX_TOOLS)
            .map(|i| json!({"name": format!("t{i}"), "inputSchema": region("R")}))
            .collect();
        let response = tools.learn(listed(Value::Array(many)));
        assert_eq!(names(&response).len(), MAX_TOOLS + 1);
        assert_eq!(tools.declared.len(), MAX_TOOLS);
        let last = raw(json!({"name": format!("t{MAX_TOOLS}"), "arguments": {"r": "x"}}));
        assert!(tools.headers_for(Some(&last)).is_empty());
    }

    #[test]
    fn m8_list_ids_are_taken_once_and_bounded() {
        let mut tools = Tools::default();
        tools.expect_list(&Id::from(7));
        assert!(tools.take_list(&Id::from(7)));
        assert!(!tools.take_list(&Id::from(7)));
        for i in 0..MAX_LISTS as i64 + 10 {
            tools.expect_list(&Id::from(i));
        }
        assert_eq!(tools.lists.len(), MAX_LISTS);
        tools.forget_list(&Id::from(0));
        assert!(!tools.take_list(&Id::from(0)));
    }
}
