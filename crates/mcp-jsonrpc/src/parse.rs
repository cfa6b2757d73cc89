//! Parsing bodies and messages.
//!
//! The kind of a message is decided from the members present (J2), in one pass over the
//! object, with a message naming the member at fault; payloads are captured as raw JSON.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::{Error, ErrorObject, Id, Message, Notification, Request, Response};

/// A parsed body: one message, or a batch of them (J3).
///
/// Batches belong to protocol revision 2025-03-26 only; whether one is acceptable is for the
/// caller to decide, with [`Body::is_batch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A body holding one message.
    Single(Message),
    /// A body holding a non-empty array of messages.
    Batch(Vec<Message>),
}

impl Body {
    /// Whether the body was an array.
    pub fn is_batch(&self) -> bool {
        matches!(self, Body::Batch(_))
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        match self {
            Body::Single(m) => std::slice::from_ref(m),
            Body::Batch(ms) => ms,
        }
    }

    /// The messages, in order, as a vector (iterate the body itself to spare the allocation a
    /// single message would need).
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            Body::Single(m) => vec![m],
            Body::Batch(ms) => ms,
        }
    }
}

impl IntoIterator for Body {
    type Item = Message;
    type IntoIter = BodyIter;

    /// The messages, in order, without allocating.
    ///
    /// ```
    /// let body = mcp_jsonrpc::parse(br#"{"jsonrpc":"2.0","method":"ping","id":1}"#)?;
    /// for message in body {
    ///     assert!(message.is_request());
    /// }
    /// # Ok::<(), mcp_jsonrpc::Error>(())
    /// ```
    fn into_iter(self) -> BodyIter {
        BodyIter(match self {
            Body::Single(m) => Inner::Single(Some(m)),
            Body::Batch(ms) => Inner::Batch(ms.into_iter()),
        })
    }
}

/// The messages of a [`Body`], in order: from [`Body::into_iter`].
#[derive(Debug)]
pub struct BodyIter(Inner);

#[derive(Debug)]
enum Inner {
    Single(Option<Message>),
    Batch(std::vec::IntoIter<Message>),
}

impl Iterator for BodyIter {
    type Item = Message;

    fn next(&mut self) -> Option<Message> {
        match &mut self.0 {
            Inner::Single(m) => m.take(),
            Inner::Batch(ms) => ms.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Inner::Single(m) => {
                let n = usize::from(m.is_some());
                (n, Some(n))
            }
            Inner::Batch(ms) => ms.size_hint(),
        }
    }
}

impl ExactSizeIterator for BodyIter {}

/// Parses a body: one message or a non-empty batch (J3).
///
/// A body that is not JSON text is an error with code -32700: not UTF-8 throughout (RFC 8259
/// section 8.1), or outside RFC 8259's grammar. JSON that is not a message (or a batch with an
/// element that is not) is an error with code -32600 (J4).
///
/// ```
/// use mcp_jsonrpc::{Body, Message, parse};
///
/// let body = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
/// assert!(matches!(body, Body::Single(Message::Notification(_))));
/// ```
pub fn parse(bytes: &[u8]) -> Result<Body, Error> {
    // serde_json checks the UTF-8 of the strings it reads, but not of those it skips (an unknown
    // member): check the whole body once, and read it as text, which needs no check again.
    let text = std::str::from_utf8(bytes).map_err(Error::utf8)?;
    let first = text
        .bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first != Some(b'[') {
        return serde_json::from_str(text)
            .map(Body::Single)
            .map_err(|e| classify(text, e));
    }
    // Capture the elements as raw slices first, so that a syntax error anywhere is -32700 and an
    // invalid element can be named by its position. Capturing checks the grammar of the whole
    // array and nothing more, so whatever goes wrong in an element after it is not -32700.
    let elements: Vec<&RawValue> = serde_json::from_str(text).map_err(Error::syntax)?;
    if elements.is_empty() {
        return Err(Error::empty_batch());
    }
    elements
        .iter()
        .enumerate()
        .map(|(i, raw)| serde_json::from_str(raw.get()).map_err(|e| Error::invalid(e, Some(i))))
        .collect::<Result<_, _>>()
        .map(Body::Batch)
}

/// Whether a body that is not a message is JSON at all decides its code (J4), and serde_json's
/// first error does not tell: a data error found before the end says nothing about the rest,
/// and some errors it calls syntax are within RFC 8259's grammar (a lone surrogate escape, a
/// number beyond `f64`), failing only because a member could not be held. So check the whole
/// text against the grammar alone, which skipping a value does, at any depth.
fn classify(text: &str, err: serde_json::Error) -> Error {
    match serde_json::from_str::<IgnoredAny>(text) {
        Ok(IgnoredAny) => Error::invalid(err, None),
        Err(syntax) => Error::syntax(syntax),
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor)
    }
}

#[derive(Clone, Copy)]
enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
        Ok(match name {
            "jsonrpc" => Field::Jsonrpc,
            "id" => Field::Id,
            "method" => Field::Method,
            "params" => Field::Params,
            "result" => Field::Result,
            "error" => Field::Error,
            _ => Field::Other,
        })
    }
}

/// The `jsonrpc` member, which must be exactly `"2.0"`.
struct Version;

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#""jsonrpc": "2.0""#)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Version, E> {
                if v == "2.0" {
                    Ok(Version)
                } else {
                    Err(E::custom(format_args!(
                        r#"unsupported "jsonrpc" version {v:?}, expected "2.0""#
                    )))
                }
            }
        }
        deserializer.deserialize_str(V)
    }
}

struct MessageVisitor;

#[derive(Default)]
struct Members {
    version: bool,
    /// `Some(None)` is an explicit `null`.
    id: Option<Option<Id>>,
    method: Option<String>,
    params: Option<Option<Box<RawValue>>>,
    result: Option<Box<RawValue>>,
    error: Option<ErrorObject>,
}

fn duplicate<E: de::Error>(name: &str) -> E {
    E::custom(format_args!("duplicate member {name:?}"))
}

fn set<T, E: de::Error>(slot: &mut Option<T>, name: &str, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(duplicate(name));
    }
    *slot = Some(value);
    Ok(())
}

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC 2.0 message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut m = Members::default();
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Jsonrpc => {
                    if m.version {
                        return Err(duplicate("jsonrpc"));
                    }
                    map.next_value::<Version>()?;
                    m.version = true;
                }
                Field::Id => {
                    let id = map.next_value::<Option<Id>>()?;
                    set(&mut m.id, "id", id)?;
                }
                Field::Method => {
                    let method = map.next_value::<String>()?;
                    set(&mut m.method, "method", method)?;
                }
                Field::Params => {
                    let raw = map.next_value::<Box<RawValue>>()?;
                    let params = match raw.get().as_bytes().first() {
                        Some(b'{' | b'[') => Some(raw),
                        // Some peers write an explicit null for "no parameters"; read it so.
                        Some(b'n') => None,
                        _ => {
                            return Err(de::Error::custom(
                                r#""params" must be an object or an array"#,
                            ));
                        }
                    };
                    set(&mut m.params, "params", params)?;
                }
                Field::Result => {
                    let result = map.next_value::<Box<RawValue>>()?;
                    set(&mut m.result, "result", result)?;
                }
                Field::Error => {
                    let error = map.next_value::<ErrorObject>()?;
                    set(&mut m.error, "error", error)?;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        m.into_message()
    }
}

impl Members {
    fn into_message<E: de::Error>(self) -> Result<Message, E> {
        if !self.version {
            return Err(E::custom(r#"missing "jsonrpc": "2.0""#));
        }
        let params = self.params.flatten();
        match (self.method, self.result, self.error) {
            (Some(method), None, None) => match self.id {
                None => Ok(Notification { method, params }.into()),
                Some(Some(id)) => Ok(Request { id, method, params }.into()),
                Some(None) => Err(E::custom("a request id must not be null")),
            },
            (Some(_), _, _) => Err(E::custom(
                r#"a message cannot have both "method" and "result" or "error""#,
            )),
            (None, Some(_), Some(_)) => Err(E::custom(
                r#"a response cannot have both "result" and "error""#,
            )),
            (None, Some(result), None) => match self.id {
                Some(Some(id)) => Ok(Response::success(id, result).into()),
                Some(None) => Err(E::custom("a successful response must have a non-null id")),
                None => Err(E::custom(r#"a response must have an "id""#)),
            },
            (None, None, Some(error)) => match self.id {
                Some(id) => Ok(Response::error(id, error).into()),
                None => Err(E::custom(r#"a response must have an "id""#)),
            },
            (None, None, None) => Err(E::custom(
                r#"not a request, notification or response: no "method", "result" or "error""#,
            )),
        }
    }
}
