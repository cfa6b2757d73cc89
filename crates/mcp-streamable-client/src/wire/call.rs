//! One request to make, and the constructors of the requests the transport makes.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Uri};

use crate::config::Config;
use crate::error::Deadline;
use crate::headers::{ACCEPT_POST, ACCEPT_SSE};
use crate::shape::MetaHeaders;

/// The session headers sent on every request once known (C1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SessionHeaders {
    /// `Mcp-Session-Id`, from the answer to `initialize`.
    pub(crate) id: Option<HeaderValue>,
    /// `MCP-Protocol-Version`, from the result of `initialize`.
    pub(crate) version: Option<HeaderValue>,
}

/// No session: the headers of a request outside any (per-request, HTTP+SSE, `initialize`).
pub(crate) static NO_SESSION: SessionHeaders = SessionHeaders {
    id: None,
    version: None,
};

/// One request to make.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub(crate) method: Method,
    pub(crate) uri: &'a Uri,
    pub(crate) accept: HeaderValue,
    pub(crate) session: &'a SessionHeaders,
    /// The headers of a per-request message (M7), mirrored from its body.
    pub(crate) meta: Option<&'a MetaHeaders>,
    pub(crate) last_event_id: Option<HeaderValue>,
    /// A JSON body, for POST.
    pub(crate) body: Option<Bytes>,
    pub(crate) timeout: Duration,
    pub(crate) deadline: Deadline,
}

impl<'a> Call<'a> {
    /// A POST of one message's bytes to `uri`, in `session`, accepting JSON or SSE (C1).
    pub(crate) fn post(
        config: &Config,
        uri: &'a Uri,
        session: &'a SessionHeaders,
        body: Bytes,
    ) -> Call<'a> {
        Call {
            method: Method::POST,
            uri,
            accept: ACCEPT_POST,
            session,
            meta: None,
            last_event_id: None,
            body: Some(body),
            timeout: config.request_timeout,
            deadline: Deadline::Request,
        }
    }

    /// A GET of an event stream from `uri`, in `session`, resuming after `last_event_id` (C3,
    /// C4), or opening the HTTP+SSE fallback's stream (C10).
    pub(crate) fn get(
        config: &Config,
        uri: &'a Uri,
        session: &'a SessionHeaders,
        last_event_id: Option<HeaderValue>,
    ) -> Call<'a> {
        Call {
            method: Method::GET,
            uri,
            accept: ACCEPT_SSE,
            session,
            meta: None,
            last_event_id,
            body: None,
            timeout: config.request_timeout,
            deadline: Deadline::Request,
        }
    }

    /// The DELETE that ends `session`, bounded by the close timeout (C8).
    pub(crate) fn delete(config: &'a Config, session: &'a SessionHeaders) -> Call<'a> {
        Call {
            method: Method::DELETE,
            uri: &config.url,
            accept: ACCEPT_POST,
            session,
            meta: None,
            last_event_id: None,
            body: None,
            timeout: config.close_timeout,
            deadline: Deadline::Close,
        }
    }

    /// The same request, with the headers of a per-request message (M7).
    pub(crate) fn meta(mut self, meta: &'a MetaHeaders) -> Call<'a> {
        self.meta = Some(meta);
        self
    }
}
