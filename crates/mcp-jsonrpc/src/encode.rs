//! Encoding messages to JSON bytes.
//!
//! The `Serialize` impls write the members in a fixed order (`jsonrpc`, `id`, then the rest) and
//! copy raw payloads verbatim, so encoding costs one pass over the payload bytes.

use std::io;

use serde::Serialize;
use serde::ser::{SerializeSeq, SerializeStruct, Serializer};

use crate::{Body, Message, Notification, Request, Response};

const VERSION: &str = "2.0";

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Request", 4)?;
        s.serialize_field("jsonrpc", VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("method", &self.method)?;
        if let Some(params) = &self.params {
            s.serialize_field("params", params)?;
        }
        s.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Notification", 3)?;
        s.serialize_field("jsonrpc", VERSION)?;
        s.serialize_field("method", &self.method)?;
        if let Some(params) = &self.params {
            s.serialize_field("params", params)?;
        }
        s.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Response", 3)?;
        s.serialize_field("jsonrpc", VERSION)?;
        s.serialize_field("id", &self.id())?;
        match self.result() {
            Ok(result) => s.serialize_field("result", result)?,
            Err(error) => s.serialize_field("error", error)?,
        }
        s.end()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(serializer),
            Message::Notification(n) => n.serialize(serializer),
            Message::Response(r) => r.serialize(serializer),
        }
    }
}

impl Serialize for Body {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Body::Single(m) => m.serialize(serializer),
            Body::Batch(ms) => {
                let mut seq = serializer.serialize_seq(Some(ms.len()))?;
                for m in ms {
                    seq.serialize_element(m)?;
                }
                seq.end()
            }
        }
    }
}

macro_rules! encode_methods {
    ($($ty:ty),*) => {$(
        impl $ty {
            /// Appends the compact JSON encoding to `dst`.
            ///
            /// Raw payloads are copied as they came, so the output holds a raw line break
            /// only where a payload had one as whitespace between tokens (a JSON string cannot
            /// hold one): replacing such a byte with a space is always safe, which is how
            /// newline-delimited framings keep one message per line.
            pub fn encode(&self, dst: &mut Vec<u8>) {
                // Writing to a Vec cannot fail, and these Serialize impls never fail.
                let _ = serde_json::to_writer(dst, self);
            }

            /// The compact JSON encoding, in a new buffer of exactly its length: one
            /// allocation, and a buffer that `bytes::Bytes` takes over without another.
            pub fn to_vec(&self) -> Vec<u8> {
                let mut counted = Counted(0);
                let _ = serde_json::to_writer(&mut counted, self);
                let mut v = Vec::with_capacity(counted.0);
                self.encode(&mut v);
                v
            }

            /// Writes the compact JSON encoding to `w`.
            pub fn write_to<W: io::Write>(&self, w: W) -> io::Result<()> {
                serde_json::to_writer(w, self).map_err(io::Error::from)
            }
        }
    )*};
}

encode_methods!(Message, Request, Notification, Response, Body);

/// A writer that only counts what it is given: the length of an encoding, measured before the
/// buffer for it is made. Raw payloads are counted, not scanned.
struct Counted(usize);

impl io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::to_raw_value;

    use crate::{ErrorObject, Id, code};

    use super::*;

    fn s(v: Vec<u8>) -> String {
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn encodes_each_kind_in_member_order() {
        let params = Some(to_raw_value(&serde_json::json!({"a": [1, 2]})).unwrap());
        let req = Request::new(7, "tools/call", params.clone());
        assert_eq!(
            s(req.to_vec()),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":[1,2]}}"#
        );
        let n = Notification::new("notifications/initialized", None);
        assert_eq!(
            s(n.to_vec()),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        );
        let ok = Response::success(Id::from("x"), to_raw_value(&()).unwrap());
        assert_eq!(
            s(ok.to_vec()),
            r#"{"jsonrpc":"2.0","id":"x","result":null}"#
        );
        let err = Response::error(None, ErrorObject::new(code::PARSE_ERROR, "bad"));
        assert_eq!(
            s(err.to_vec()),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#
        );
    }

    #[test]
    fn raw_payloads_are_copied_verbatim() {
        // Whitespace and key order inside a raw payload survive: it is never re-parsed.
        let raw = RawValueBox::from(r#"{ "z" : 1,  "a":2 }"#);
        let req = Request::new(1, "m", Some(raw.0));
        assert!(s(req.to_vec()).contains(r#""params":{ "z" : 1,  "a":2 }"#));
    }

    #[test]
    fn encodes_a_batch_as_an_array() {
        let body = Body::Batch(vec![
            Notification::new("a", None).into(),
            Notification::new("b", None).into(),
        ]);
        assert_eq!(
            s(body.to_vec()),
            r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#
        );
    }

    #[test]
    fn line_breaks_in_strings_are_escaped() {
        let n = Notification::new("line\nbreak\r", None);
        let out = s(n.to_vec());
        assert!(!out.contains('\n') && !out.contains('\r'), "{out}");
    }

    /// `to_vec` makes its buffer once, of the encoding's length: nothing to grow, and nothing
    /// spare for `Bytes::from` to keep track of.
    #[test]
    fn to_vec_allocates_exactly_the_encoding() {
        let escaped = ErrorObject::new(code::INTERNAL_ERROR, "a \"quoted\"\nline");
        let messages: [Message; 3] = [
            Request::new(
                Id::from("é\t"),
                "tools/call",
                Some(RawValueBox::from("[1, 2]").0),
            )
            .into(),
            Response::error(Some(Id::from(3)), escaped).into(),
            Notification::new("n", None).into(),
        ];
        for message in messages {
            let v = message.to_vec();
            assert_eq!(v.len(), v.capacity(), "{}", s(v.clone()));
        }
    }

    struct RawValueBox(Box<serde_json::value::RawValue>);

    impl From<&str> for RawValueBox {
        fn from(s: &str) -> Self {
            RawValueBox(serde_json::value::RawValue::from_string(s.to_owned()).unwrap())
        }
    }
}
