//! Request ids.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

/// The id of a request: an integer or a string (J1).
///
/// JSON-RPC also allows fractional numbers, which it discourages and MCP forbids; they are
/// refused here, as are integers outside the range of `i64` and `-0` (read as a float, and one
/// that could not be answered as written). `null` is not an `Id`: it only
/// appears in an error response to a request whose id could not be read, which
/// [`Response`](crate::Response) models as `Option<Id>`.
///
/// ```
/// use mcp_jsonrpc::Id;
///
/// let id: Id = serde_json::from_str(r#""abc""#).unwrap();
/// assert_eq!(id, Id::from("abc"));
/// assert_eq!(serde_json::to_string(&Id::from(7)).unwrap(), "7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::String(s)
    }
}

/// Formats the id as it appears in JSON: `7` or `"abc"`, so that the two kinds never look alike
/// in logs.
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => serializer.serialize_i64(*n),
            Id::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer or a string id")
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Id, E> {
        Ok(Id::Number(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Id, E> {
        i64::try_from(n)
            .map(Id::Number)
            .map_err(|_| E::custom(format_args!("id {n} is out of range")))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Id, E> {
        Ok(Id::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Id, E> {
        Ok(Id::String(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_integers_and_strings() {
        assert_eq!(serde_json::from_str::<Id>("-3").unwrap(), Id::Number(-3));
        assert_eq!(
            serde_json::from_str::<Id>(&i64::MAX.to_string()).unwrap(),
            Id::Number(i64::MAX)
        );
        assert_eq!(
            serde_json::from_str::<Id>(r#""a\"b""#).unwrap(),
            Id::from("a\"b")
        );
    }

    #[test]
    fn refuses_other_json() {
        for bad in [
            "1.5",
            "1e3",
            "null",
            "true",
            "[]",
            "{}",
            "9223372036854775808",
        ] {
            assert!(
                serde_json::from_str::<Id>(bad).is_err(),
                "{bad} was accepted"
            );
        }
    }

    #[test]
    fn displays_as_json() {
        assert_eq!(Id::from(4).to_string(), "4");
        assert_eq!(Id::from("4").to_string(), "\"4\"");
    }
}
