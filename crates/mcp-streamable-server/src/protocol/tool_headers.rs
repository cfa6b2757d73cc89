//! M5: the `Mcp-Param-*` headers a per-request `tools/call` carries, checked against its
//! arguments before the application sees it, by the declarations the application gives.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use mcp_streamable_protocol::param_headers::{InvalidDeclaration, ParamHeaders};
use serde_json::Value;

/// The `Mcp-Param-*` declarations of an application's tools (2026-07-28, SEP-2243), by tool
/// name: what [`Config::tool_headers`](crate::Config::tool_headers) checks a per-request
/// `tools/call`'s headers against.
///
/// The application gives them, from the same `inputSchema`s its `tools/list` answers with
/// ([`ToolHeaders::from_tools_list`], [`ToolHeaders::set`]). The server does not learn them
/// from the `tools/list` answers it carries: a node that has carried none (the client listed
/// its tools through another node, or before this one started) would then let any header
/// through, and a check that depends on where a request lands is none. Declared, every node
/// built from the same code checks the same way. A tool list that changes while the server
/// runs is updated here too: clones share one table.
///
/// ```
/// use mcp_streamable_server::{Config, ToolHeaders};
/// use serde_json::json;
///
/// let tools = json!({"tools": [{"name": "search", "inputSchema": {"type": "object",
///     "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}]});
/// let headers = ToolHeaders::from_tools_list(&tools).unwrap();
/// let config = Config::default().tool_headers(headers);
/// # let _ = config;
/// ```
#[derive(Clone, Default)]
pub struct ToolHeaders {
    tools: Arc<RwLock<HashMap<String, Arc<ParamHeaders>>>>,
}

impl fmt::Debug for ToolHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ToolHeaders")
            .field("tools", &tools.len())
            .finish()
    }
}

/// A tool of a `tools/list` result whose `x-mcp-header` declarations are invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InvalidTool {
    /// The tool's name.
    pub tool: String,
    /// What is wrong with its declarations.
    pub why: InvalidDeclaration,
}

impl fmt::Display for InvalidTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool {:?}: {}", self.tool, self.why)
    }
}

impl std::error::Error for InvalidTool {}

impl ToolHeaders {
    /// An empty table: a `tools/call` that carries any `Mcp-Param-*` header is refused.
    pub fn new() -> ToolHeaders {
        ToolHeaders::default()
    }

    /// The declarations of every tool of a `tools/list` result (`{"tools": [...]}`). A tool
    /// whose declarations are invalid is refused: clients drop such tools, so it could never
    /// be called with its headers.
    pub fn from_tools_list(result: &Value) -> Result<ToolHeaders, InvalidTool> {
        let headers = ToolHeaders::new();
        let tools = result.get("tools").and_then(Value::as_array);
        for tool in tools.into_iter().flatten() {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            headers.set(name, schema).map_err(|why| InvalidTool {
                tool: name.to_owned(),
                why,
            })?;
        }
        Ok(headers)
    }

    /// Declares (or declares again) the tool `name` by its `inputSchema`.
    pub fn set(&self, name: &str, input_schema: &Value) -> Result<(), InvalidDeclaration> {
        let params = ParamHeaders::from_input_schema(input_schema)?;
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        tools.insert(name.to_owned(), Arc::new(params));
        Ok(())
    }

    /// Forgets the tool `name`.
    pub fn remove(&self, name: &str) {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        tools.remove(name);
    }

    /// The declarations of tool `name`, if it is declared.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<ParamHeaders>> {
        let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner);
        tools.get(name).cloned()
    }
}
