//! The `Mcp-Param-*` headers of 2026-07-28 (SEP-2243): a tool's `inputSchema` marks the
//! arguments that a `tools/call` mirrors into headers, so that what sits between client and
//! server can route on them without reading bodies. The client writes them; the server checks
//! them against the body.
//!
//! A declaration is `"x-mcp-header": "<Name>"` on a property reached from the schema's root
//! through `properties` alone, typed `string`, `integer` or `boolean`; the header is
//! `Mcp-Param-<Name>`. Names are RFC 9110 tokens, unique within a tool whatever their case. A
//! tool with any declaration out of those rules is invalid as a whole: a client does not call it.

use std::borrow::Cow;
use std::fmt;

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::header_value::{decode_header_value, encode_header_value};

/// The prefix of every mirrored parameter's header name, lowercase as `http` spells names.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// The schema keyword that declares a mirrored parameter.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// The JSON types a mirrored parameter may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamType {
    /// `"type": "string"`: the value as it is, encoded when it must be.
    String,
    /// `"type": "integer"`: its decimal digits.
    Integer,
    /// `"type": "boolean"`: `true` or `false`.
    Boolean,
}

/// One argument a tool mirrors into a header.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MirroredParam {
    /// Where the argument is in `arguments`: property names from the top.
    pub path: Vec<String>,
    /// The name declared, as written (the part after `Mcp-Param-`).
    pub name: String,
    /// The header: `mcp-param-` and the name, lowercase.
    pub header: HeaderName,
    /// The argument's declared type.
    pub kind: ParamType,
}

/// Why a tool's `x-mcp-header` declarations are invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidDeclaration {
    /// A name that is empty, not a string, or not an RFC 9110 token.
    BadName(String),
    /// A declaration on a property that is not a string, an integer or a boolean.
    NotPrimitive(String),
    /// Two declarations of the same name, compared without case.
    Duplicate(String),
    /// A declaration outside the chain of `properties` from the root (under `items`, `anyOf`,
    /// `$defs` and the like), where no argument can be found by name.
    Unreachable,
}

impl fmt::Display for InvalidDeclaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidDeclaration::BadName(name) => {
                write!(f, "x-mcp-header {name:?} is not an HTTP token")
            }
            InvalidDeclaration::NotPrimitive(name) => write!(
                f,
                "x-mcp-header {name:?} is on a property that is not a string, integer or boolean"
            ),
            InvalidDeclaration::Duplicate(name) => {
                write!(f, "x-mcp-header {name:?} is declared twice")
            }
            InvalidDeclaration::Unreachable => {
                f.write_str("an x-mcp-header is declared outside the properties of the arguments")
            }
        }
    }
}

impl std::error::Error for InvalidDeclaration {}

/// Why a request's `Mcp-Param-*` headers do not match its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamMismatch {
    /// The header of an argument the body has is missing.
    Missing(HeaderName),
    /// A header for an argument the body does not have (or has as `null`).
    Unexpected(HeaderName),
    /// A `Mcp-Param-*` header for no parameter this tool mirrors.
    Undeclared(HeaderName),
    /// The header is given more than once.
    Repeated(HeaderName),
    /// The header cannot be read: not visible ASCII, or bad `=?base64?...?=`.
    Unreadable(HeaderName, crate::DecodeError),
    /// The header's value is not the argument's.
    Differs(HeaderName),
}

impl fmt::Display for ParamMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamMismatch::Missing(h) => write!(f, "the {h} header is missing"),
            ParamMismatch::Unexpected(h) => {
                write!(f, "the {h} header is given but the argument is absent")
            }
            ParamMismatch::Undeclared(h) => {
                write!(f, "the {h} header names no parameter this tool mirrors")
            }
            ParamMismatch::Repeated(h) => write!(f, "the {h} header is given more than once"),
            ParamMismatch::Unreadable(h, why) => write!(f, "the {h} header cannot be read: {why}"),
            ParamMismatch::Differs(h) => {
                write!(f, "the {h} header does not match the argument's value")
            }
        }
    }
}

impl std::error::Error for ParamMismatch {}

/// The arguments one tool mirrors into headers, read from its `inputSchema`.
///
/// ```
/// use mcp_streamable_protocol::param_headers::ParamHeaders;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "region": {"type": "string", "x-mcp-header": "Region"},
///     "query": {"type": "string"},
/// }});
/// let tool = ParamHeaders::from_input_schema(&schema).unwrap();
/// let headers = tool.headers_for(&json!({"region": "eu west", "query": "x"}));
/// assert_eq!(headers.len(), 1);
/// assert_eq!(headers[0].0, "mcp-param-region");
/// assert_eq!(headers[0].1, "eu west");
///
/// let mut request = http::HeaderMap::new();
/// request.insert("mcp-param-region", "eu west".parse().unwrap());
/// assert!(tool.check(&request, Some(&json!({"region": "eu west"}))).is_ok());
/// assert!(tool.check(&request, Some(&json!({"region": "us"}))).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamHeaders {
    params: Vec<MirroredParam>,
}

impl ParamHeaders {
    /// The declarations of `schema` (a tool's `inputSchema`), checked; none is valid too.
    pub fn from_input_schema(schema: &Value) -> Result<ParamHeaders, InvalidDeclaration> {
        let mut params = Vec::new();
        collect(schema, &mut Vec::new(), &mut params)?;
        if count_declarations(schema) != params.len() {
            return Err(InvalidDeclaration::Unreachable);
        }
        for (i, param) in params.iter().enumerate() {
            if params[..i].iter().any(|p| p.header == param.header) {
                return Err(InvalidDeclaration::Duplicate(param.name.clone()));
            }
        }
        Ok(ParamHeaders { params })
    }

    /// Whether the tool mirrors nothing.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The mirrored parameters, in the order serde_json keeps the schema's properties.
    pub fn iter(&self) -> impl Iterator<Item = &MirroredParam> {
        self.params.iter()
    }

    /// The headers a `tools/call` with `arguments` carries: one per mirrored argument present
    /// and not `null`, its value encoded when it must be.
    pub fn headers_for(&self, arguments: &Value) -> Vec<(HeaderName, HeaderValue)> {
        self.params
            .iter()
            .filter_map(|p| {
                let text = text_of(lookup(arguments, &p.path)?)?;
                Some((p.header.clone(), encode_header_value(&text)))
            })
            .collect()
    }

    /// Checks a `tools/call`'s `Mcp-Param-*` headers against its `arguments`: each mirrored
    /// argument present has its header with its value, and no other `Mcp-Param-*` header is
    /// given.
    pub fn check(
        &self,
        headers: &HeaderMap,
        arguments: Option<&Value>,
    ) -> Result<(), ParamMismatch> {
        for name in headers.keys() {
            if name.as_str().starts_with(PARAM_HEADER_PREFIX)
                && !self.params.iter().any(|p| p.header == name)
            {
                return Err(ParamMismatch::Undeclared(name.clone()));
            }
        }
        for param in &self.params {
            check_one(param, headers, arguments)?;
        }
        Ok(())
    }
}

fn check_one(
    param: &MirroredParam,
    headers: &HeaderMap,
    arguments: Option<&Value>,
) -> Result<(), ParamMismatch> {
    let header = &param.header;
    let value = arguments
        .and_then(|a| lookup(a, &param.path))
        .and_then(text_of);
    let mut given = headers.get_all(header).iter();
    let first = given.next();
    if given.next().is_some() {
        return Err(ParamMismatch::Repeated(header.clone()));
    }
    match (first, value) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(ParamMismatch::Missing(header.clone())),
        (Some(_), None) => Err(ParamMismatch::Unexpected(header.clone())),
        (Some(raw), Some(value)) => {
            let decoded = decode_header_value(raw)
                .map_err(|why| ParamMismatch::Unreadable(header.clone(), why))?;
            if decoded == value {
                Ok(())
            } else {
                Err(ParamMismatch::Differs(header.clone()))
            }
        }
    }
}

/// The declarations reached from `schema` through `properties`, depth first.
fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<MirroredParam>,
) -> Result<(), InvalidDeclaration> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(declared) = property.get(X_MCP_HEADER) {
            out.push(declaration(declared, property, path)?);
        }
        collect(property, path, out)?;
        path.pop();
    }
    Ok(())
}

fn declaration(
    declared: &Value,
    property: &Value,
    path: &[String],
) -> Result<MirroredParam, InvalidDeclaration> {
    let name = declared
        .as_str()
        .ok_or_else(|| InvalidDeclaration::BadName(declared.to_string()))?;
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(InvalidDeclaration::BadName(name.to_owned()));
    }
    let kind = match property.get("type").and_then(Value::as_str) {
        Some("string") => ParamType::String,
        Some("integer") => ParamType::Integer,
        Some("boolean") => ParamType::Boolean,
        _ => return Err(InvalidDeclaration::NotPrimitive(name.to_owned())),
    };
    let header = HeaderName::try_from(format!("{PARAM_HEADER_PREFIX}{name}"))
        .map_err(|_| InvalidDeclaration::BadName(name.to_owned()))?;
    Ok(MirroredParam {
        path: path.to_vec(),
        name: name.to_owned(),
        header,
        kind,
    })
}

/// Every `x-mcp-header` key anywhere in `schema`.
fn count_declarations(schema: &Value) -> usize {
    match schema {
        Value::Object(map) => map_count(map),
        Value::Array(items) => items.iter().map(count_declarations).sum(),
        _ => 0,
    }
}

fn map_count(map: &Map<String, Value>) -> usize {
    let here = usize::from(map.contains_key(X_MCP_HEADER));
    here + map.values().map(count_declarations).sum::<usize>()
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn lookup<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(arguments, |v, key| v.get(key))
}

/// The text a header carries for `value`; `None` for `null` and for what no header carries.
fn text_of(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Bool(true) => Some(Cow::Borrowed("true")),
        Value::Bool(false) => Some(Cow::Borrowed("false")),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests;
