//! The three kinds of message and the enum that holds any of them.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{ErrorObject, Id, raw_eq};

/// The method name of the MCP `initialize` request.
pub const INITIALIZE: &str = "initialize";

/// A JSON-RPC 2.0 message: a request, a notification or a response (J1).
///
/// Parse one with [`parse`](crate::parse) (a body that may also be a batch) or with
/// `serde_json::from_slice`; encode one with [`Message::encode`] or `serde_json`.
///
/// ```
/// use mcp_jsonrpc::{Id, Message};
///
/// let msg: Message = serde_json::from_str(
///     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
/// ).unwrap();
/// assert!(msg.is_initialize());
/// assert_eq!(msg.request_id(), Some(&Id::from(1)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A call that expects a response.
    Request(Request),
    /// A call that expects no response.
    Notification(Notification),
    /// The answer to a request.
    Response(Response),
}

impl Message {
    /// Whether this is an MCP `initialize` request.
    pub fn is_initialize(&self) -> bool {
        matches!(self, Message::Request(r) if r.method == INITIALIZE)
    }

    /// The id of this message if it is a request.
    pub fn request_id(&self) -> Option<&Id> {
        match self {
            Message::Request(r) => Some(&r.id),
            _ => None,
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }

    /// Whether this is a request (and so needs a response).
    pub fn is_request(&self) -> bool {
        matches!(self, Message::Request(_))
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Message::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}

/// A request: a method call that expects a [`Response`] with the same id.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Request {
    /// The id the response will carry.
    pub id: Id,
    /// The method to call.
    pub method: String,
    /// The parameters, as raw JSON (an object or an array).
    pub params: Option<Box<RawValue>>,
}

impl Request {
    /// A request.
    pub fn new(
        id: impl Into<Id>,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params,
        }
    }

    /// Deserializes the parameters into `T`; absent parameters read as JSON `null`.
    pub fn parse_params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        parse_params(self.params.as_deref())
    }
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.method == other.method
            && raw_eq(self.params.as_deref(), other.params.as_deref())
    }
}

impl Eq for Request {}

/// A notification: a method call without an id, which gets no response.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Notification {
    /// The method to call.
    pub method: String,
    /// The parameters, as raw JSON (an object or an array).
    pub params: Option<Box<RawValue>>,
}

impl Notification {
    /// A notification.
    pub fn new(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        Notification {
            method: method.into(),
            params,
        }
    }

    /// Deserializes the parameters into `T`; absent parameters read as JSON `null`.
    pub fn parse_params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        parse_params(self.params.as_deref())
    }
}

impl PartialEq for Notification {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method && raw_eq(self.params.as_deref(), other.params.as_deref())
    }
}

impl Eq for Notification {}

fn parse_params<'a, T: Deserialize<'a>>(params: Option<&'a RawValue>) -> serde_json::Result<T> {
    serde_json::from_str(params.map_or("null", RawValue::get))
}

/// A response: the result of a request, or the error it met.
///
/// A successful response always has an id; an error response may have none (`null` on the wire),
/// when the request it answers could not be read (J1, J4). The constructors keep that invariant.
///
/// ```
/// use mcp_jsonrpc::{ErrorObject, Id, Response, code};
///
/// let ok = Response::success(Id::from(1), serde_json::value::to_raw_value(&42).unwrap());
/// assert_eq!(ok.result().unwrap().get(), "42");
///
/// let bad = Response::error(None, ErrorObject::new(code::PARSE_ERROR, "invalid JSON"));
/// assert_eq!(bad.id(), None);
/// ```
#[derive(Debug, Clone)]
pub struct Response {
    id: Option<Id>,
    outcome: Result<Box<RawValue>, ErrorObject>,
}

impl Response {
    /// A successful response to the request `id`.
    pub fn success(id: Id, result: Box<RawValue>) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result),
        }
    }

    /// An error response; `id` is `None` when the request's id could not be determined.
    pub fn error(id: Option<Id>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
        }
    }

    /// The id of the request this answers; `None` only for an error response to an unreadable
    /// request.
    pub fn id(&self) -> Option<&Id> {
        self.id.as_ref()
    }

    /// The result, or the error object.
    pub fn result(&self) -> Result<&RawValue, &ErrorObject> {
        self.outcome.as_deref()
    }

    /// Whether this is an error response.
    pub fn is_error(&self) -> bool {
        self.outcome.is_err()
    }

    /// Splits the response into its id and outcome.
    pub fn into_parts(self) -> (Option<Id>, Result<Box<RawValue>, ErrorObject>) {
        (self.id, self.outcome)
    }
}

impl PartialEq for Response {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && match (&self.outcome, &other.outcome) {
                (Ok(a), Ok(b)) => a.get() == b.get(),
                (Err(a), Err(b)) => a == b,
                _ => false,
            }
    }
}

impl Eq for Response {}
