//! How a reader recovers a stream that broke before its response: handed to it as a value, so
//! that readers need not know the lanes that send.

use bytes::Bytes;
use mcp_jsonrpc::{Id, Request};

use crate::shape::{self, MetaHeaders};
use crate::wire::{Answer, Http};

/// What a reader does when its stream breaks before the response.
#[derive(Debug)]
pub(crate) enum Recovery {
    /// Resume the stream with GET and `Last-Event-ID` (C4), in the stream's session.
    Resume,
    /// Send the request again under a new id (M7): a per-request stream cannot be resumed.
    Resend(Box<Resend>),
}

/// What a per-request stream needs to send its request again under a new id (M7).
#[derive(Debug)]
pub(crate) struct Resend {
    /// The request as first sent, under the application's id.
    request: Request,
    meta: MetaHeaders,
    /// The re-sends so far.
    count: u32,
}

impl Resend {
    /// Recovery by sending `request`, with its headers `meta`, again.
    pub(crate) fn new(request: Request, meta: MetaHeaders) -> Resend {
        Resend {
            request,
            meta,
            count: 0,
        }
    }

    /// Sends the request again under a new id; returns the id and the answer.
    pub(crate) async fn post(&mut self, http: &Http) -> (Id, Answer) {
        self.count += 1;
        let id = shape::resend_id(&self.request.id, self.count);
        tracing::debug!(original = %self.request.id, %id, "re-sending the request under a new id");
        // Written under the new id without copying the request.
        let original = std::mem::replace(&mut self.request.id, id.clone());
        let body = self.request.to_vec();
        self.request.id = original;
        let answer = http.post_per_request(Bytes::from(body), &self.meta).await;
        (id, answer)
    }
}
