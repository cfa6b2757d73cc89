//! A request's transport headers, read once where the request arrives: the family it names
//! (M1, M2), the session-based checks (S6, S8) and the per-request ones (M3) all look at this
//! value instead of the header map.

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::protocol::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID, is_per_request_date};

/// One single-valued header as the request gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Field {
    /// Not given.
    #[default]
    Absent,
    /// Given once, as visible ASCII.
    One(HeaderValue),
    /// Given more than once, or not visible ASCII.
    Malformed,
}

impl Field {
    /// The value of `name` in `headers`. The value is shared with the request's, not copied.
    fn read(headers: &HeaderMap, name: &HeaderName) -> Field {
        let mut values = headers.get_all(name).iter();
        let Some(first) = values.next() else {
            return Field::Absent;
        };
        if values.next().is_some() || first.to_str().is_err() {
            return Field::Malformed;
        }
        Field::One(first.clone())
    }

    /// The value as text: `Ok(None)` when absent, `Err(())` when malformed.
    pub(crate) fn get(&self) -> Result<Option<&str>, ()> {
        match self {
            Field::Absent => Ok(None),
            // Checked when read.
            Field::One(value) => value.to_str().map(Some).map_err(|_| ()),
            Field::Malformed => Err(()),
        }
    }
}

/// The headers by which the transport routes and checks a request, each read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TransportHeaders {
    /// `MCP-Protocol-Version`.
    pub(crate) version: Field,
    /// `Mcp-Session-Id`.
    pub(crate) session_id: Field,
}

impl TransportHeaders {
    /// Reads them from `headers`.
    pub(crate) fn read(headers: &HeaderMap) -> TransportHeaders {
        TransportHeaders {
            version: Field::read(headers, &MCP_PROTOCOL_VERSION),
            session_id: Field::read(headers, &MCP_SESSION_ID),
        }
    }

    /// The protocol version the header names, when it names one well-formed: the family a
    /// POST claims by its header (M1). Malformed counts as absent here; the checks of the
    /// family refuse it.
    pub(crate) fn version(&self) -> Option<&str> {
        self.version.get().ok().flatten()
    }

    /// Whether the header names a per-request revision (M1, M2).
    pub(crate) fn names_per_request_version(&self) -> bool {
        self.version().is_some_and(is_per_request_date)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&HeaderName, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append((*name).clone(), HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    #[test]
    fn a_header_is_absent_one_or_malformed() {
        let read = |pairs: &[(&HeaderName, &[u8])]| TransportHeaders::read(&headers(pairs));
        assert_eq!(read(&[]).version, Field::Absent);
        assert_eq!(read(&[]).version.get(), Ok(None));
        let one = read(&[(&MCP_SESSION_ID, b"abc")]);
        assert_eq!(one.session_id.get(), Ok(Some("abc")));
        assert_eq!(one.version, Field::Absent);
        let twice = read(&[(&MCP_SESSION_ID, b"a"), (&MCP_SESSION_ID, b"b")]);
        assert_eq!(twice.session_id, Field::Malformed);
        let opaque = read(&[(&MCP_PROTOCOL_VERSION, b"2025-\xff")]);
        assert_eq!(opaque.version.get(), Err(()));
        assert_eq!(opaque.version(), None);
    }

    #[test]
    fn the_family_a_version_header_names() {
        let read = |v: &[u8]| TransportHeaders::read(&headers(&[(&MCP_PROTOCOL_VERSION, v)]));
        assert!(read(b"2026-07-28").names_per_request_version());
        assert!(!read(b"2025-11-25").names_per_request_version());
        assert!(!TransportHeaders::default().names_per_request_version());
    }
}
