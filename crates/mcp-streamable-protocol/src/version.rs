//! The protocol revisions the transport speaks, parsed once and compared as values.

use std::fmt;
use std::str::FromStr;

/// A revision of the Model Context Protocol that this transport speaks.
///
/// Parsed once from its date (`"2025-11-25".parse()`), then compared and asked what it allows,
/// instead of comparing dates as text everywhere. Ordered by date.
///
/// ```
/// use mcp_streamable_protocol::ProtocolVersion;
///
/// let v: ProtocolVersion = "2025-03-26".parse().unwrap();
/// assert!(v.supports_batches());
/// assert!(!v.primes());
/// assert!(ProtocolVersion::V2026_07_28.is_per_request());
/// assert!(v < ProtocolVersion::V2025_11_25);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2025-03-26: sessions and the Streamable HTTP transport; the only one with batches.
    V2025_03_26,
    /// 2025-06-18: no batches; `MCP-Protocol-Version` on every request.
    V2025_06_18,
    /// 2025-11-25: SSE streams open with a priming event.
    V2025_11_25,
    /// 2026-07-28: the per-request protocol, without sessions.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every revision spoken, oldest first.
    pub const ALL: &'static [ProtocolVersion] = &[
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The revisions of the session-based family, oldest first.
    pub const SESSION: &'static [ProtocolVersion] = &[
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
    ];

    /// The revisions of the per-request family, oldest first.
    pub const PER_REQUEST: &'static [ProtocolVersion] = &[ProtocolVersion::V2026_07_28];

    /// The revision assumed when a request names none and no session knows better: the
    /// first of the Streamable HTTP transport.
    pub const DEFAULT_NEGOTIATED: ProtocolVersion = ProtocolVersion::V2025_03_26;

    /// The newest revision of the session-based family.
    pub const LATEST_SESSION: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The newest revision of the per-request family.
    pub const LATEST_PER_REQUEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The revision's date, as it is written on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether a POST may carry a JSON-RPC batch (2025-03-26 only).
    pub const fn supports_batches(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// Whether an SSE stream of a session opens with a priming event (2025-11-25 on).
    pub fn primes(self) -> bool {
        self >= ProtocolVersion::V2025_11_25 && !self.is_per_request()
    }

    /// Whether the revision belongs to the per-request family (2026-07-28 on): no sessions,
    /// one request per POST, its metadata in `params._meta`.
    pub fn is_per_request(self) -> bool {
        self >= ProtocolVersion::V2026_07_28
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version string that names no revision this transport speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVersion {
    per_request: bool,
}

impl UnknownVersion {
    /// Whether the string is shaped like a revision of the per-request family: a `YYYY-MM-DD`
    /// date no earlier than 2026-07-28 (a newer revision than this transport knows).
    pub fn is_per_request(&self) -> bool {
        self.per_request
    }
}

impl fmt::Display for UnknownVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown protocol version")
    }
}

impl std::error::Error for UnknownVersion {}

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, UnknownVersion> {
        ProtocolVersion::ALL
            .iter()
            .copied()
            .find(|v| v.as_str() == s)
            .ok_or(UnknownVersion {
                per_request: is_per_request_date(s),
            })
    }
}

/// Whether `version` names a revision of the per-request family: a `YYYY-MM-DD` date no
/// earlier than 2026-07-28, whether this transport speaks it or not.
pub fn is_per_request_date(version: &str) -> bool {
    let b = version.as_bytes();
    let date_shaped = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    // Dates of this shape order as text.
    date_shaped && version >= ProtocolVersion::V2026_07_28.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_round_trips_and_orders_by_date() {
        for pair in ProtocolVersion::ALL.windows(2) {
            assert!(pair[0] < pair[1]);
            assert!(pair[0].as_str() < pair[1].as_str());
        }
        for v in ProtocolVersion::ALL {
            assert_eq!(v.as_str().parse::<ProtocolVersion>(), Ok(*v));
            assert_eq!(v.to_string(), v.as_str());
        }
    }

    #[test]
    fn what_each_revision_allows() {
        use ProtocolVersion::*;
        let table = [
            (V2025_03_26, true, false, false),
            (V2025_06_18, false, false, false),
            (V2025_11_25, false, true, false),
            (V2026_07_28, false, false, true),
        ];
        for (v, batches, primes, per_request) in table {
            assert_eq!(v.supports_batches(), batches, "{v}");
            assert_eq!(v.primes(), primes, "{v}");
            assert_eq!(v.is_per_request(), per_request, "{v}");
        }
        assert!(ProtocolVersion::SESSION.iter().all(|v| !v.is_per_request()));
        assert!(
            ProtocolVersion::PER_REQUEST
                .iter()
                .all(|v| v.is_per_request())
        );
    }

    #[test]
    fn unknown_versions_say_whether_they_look_per_request() {
        for v in ["2026-12-01", "2099-01-01"] {
            assert!(
                v.parse::<ProtocolVersion>().unwrap_err().is_per_request(),
                "{v}"
            );
        }
        for v in [
            "2025-11-24",
            "2026-07-27",
            "",
            "draft",
            "zzzz-zz-zz",
            "2026-7-28",
            "2026-07-28x",
        ] {
            assert!(
                !v.parse::<ProtocolVersion>().unwrap_err().is_per_request(),
                "{v}"
            );
        }
        assert!(is_per_request_date("2026-07-28"));
    }
}
