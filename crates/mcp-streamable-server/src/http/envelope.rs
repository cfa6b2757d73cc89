//! What one node hands another about a session the other holds, and the answers: JSON, carried
//! by the [`Cluster`](crate::Cluster) as bytes.

use mcp_jsonrpc::{Id, RawValue};
use serde::{Deserialize, Serialize};

use crate::http::error::{Kind, Reject};

/// A request for the holder of `session`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Envelope {
    /// A POST's messages, with what the holder needs to check and deliver them.
    Post {
        session: String,
        owner: Option<String>,
        /// The `MCP-Protocol-Version` header, if any.
        version: Option<String>,
        /// The body, as the client sent it.
        body: Box<RawValue>,
        /// The request's method, URI and headers (credentials left out), for the parts the
        /// application reads.
        parts: Parts,
    },
    /// A GET for the standalone stream, which node `node` reads from the store under `token`.
    Standalone {
        session: String,
        owner: Option<String>,
        node: String,
        token: u64,
    },
    /// The client of the standalone stream that node `node` reads under `token` left.
    Leave { node: String, token: u64 },
    /// To the node reading the standalone stream under `token`: another reader took it over,
    /// or the session ended.
    Moved { token: u64 },
    /// A DELETE.
    Delete {
        session: String,
        owner: Option<String>,
    },
}

/// A request's method, URI and headers, without credentials.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Parts {
    pub(crate) uri: String,
    pub(crate) headers: Vec<(String, String)>,
}

/// Headers never handed to another node: credentials stay on the node that checked them.
const WITHHELD: [http::HeaderName; 3] = [
    http::header::AUTHORIZATION,
    http::header::COOKIE,
    http::header::PROXY_AUTHORIZATION,
];

impl Parts {
    pub(crate) fn of(parts: &http::request::Parts) -> Parts {
        let headers = parts
            .headers
            .iter()
            .filter(|(name, _)| !WITHHELD.contains(name))
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect();
        Parts {
            uri: parts.uri.to_string(),
            headers,
        }
    }

    /// The parts of a POST carrying these: what the holder's application reads.
    pub(crate) fn to_http(&self) -> http::request::Parts {
        let mut builder = http::Request::builder()
            .method(http::Method::POST)
            .uri(self.uri.as_str());
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let (parts, ()) = builder
            .body(())
            .unwrap_or_else(|_| http::Request::new(()))
            .into_parts();
        parts
    }
}

/// The holder's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    /// The messages were delivered; none was a request (202).
    Accepted,
    /// The requests are in flight on `stream`, which opens with a priming event if `prime`.
    Stream { stream: u64, prime: bool },
    /// The standalone stream is read from the store by the asking node: after `before` if
    /// there is one, from its start if not; it primes if `prime`.
    Standalone { prime: bool, before: Option<u64> },
    /// Done: a DELETE, a leave.
    Done,
    /// This node does not hold the session (any more): look it up again.
    NotHere,
    /// Refused, as the holder would have answered the client.
    Refused(Refusal),
}

/// A refusal, as it travels.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Refusal {
    kind: Kind,
    code: i64,
    message: String,
    id: Option<Id>,
    data: Option<Box<RawValue>>,
}

impl From<Reject> for Answer {
    fn from(reject: Reject) -> Answer {
        Answer::Refused(Refusal {
            kind: reject.kind,
            code: reject.code,
            message: reject.message,
            id: reject.id,
            data: reject.data,
        })
    }
}

impl From<Refusal> for Reject {
    fn from(refusal: Refusal) -> Reject {
        Reject {
            kind: refusal.kind,
            code: refusal.code,
            message: refusal.message,
            id: refusal.id,
            data: refusal.data,
        }
    }
}

impl Envelope {
    /// The session the envelope is about, when it names one.
    pub(crate) fn session(&self) -> Option<&str> {
        match self {
            Envelope::Post { session, .. }
            | Envelope::Standalone { session, .. }
            | Envelope::Delete { session, .. } => Some(session),
            Envelope::Leave { .. } | Envelope::Moved { .. } => None,
        }
    }

    pub(crate) fn to_bytes(&self) -> bytes::Bytes {
        bytes::Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

impl Answer {
    pub(crate) fn to_bytes(&self) -> bytes::Bytes {
        bytes::Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}
