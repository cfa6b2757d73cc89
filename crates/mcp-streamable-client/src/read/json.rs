//! Reading a JSON reply (C2): one message or an array of them, bounded in size and time.

use std::sync::Arc;

use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::error::{Error, Kind};
use crate::read::tracker::Tracker;
use crate::state::Inner;
use crate::wire::{Body, SessionHeaders};

/// Reads a JSON reply: one message or an array of them, bounded in size and time.
pub(crate) async fn read(
    inner: Arc<Inner>,
    session: SessionHeaders,
    body: Body,
    mut tracker: Tracker,
) {
    let limit = inner.config().max_event_size;
    let timeout = inner.config().request_timeout;
    let mut shutdown = inner.shutdown_signal();
    let read = tokio::time::timeout(timeout, Limited::new(body, limit).collect());
    let collected = tokio::select! {
        biased;
        _ = shutdown.wait_for(|closed| *closed) => return,
        collected = read => collected,
    };
    let reason = match collected {
        Err(_) => "the JSON reply did not arrive in time",
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            tracing::warn!(limit, "server sent a JSON reply larger than the limit");
            let error = Error::new(Kind::TooLarge { limit }).with(e);
            if !inner.deliver(Err(error.into())).await {
                return;
            }
            "the JSON reply was larger than the limit"
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "reading a JSON reply failed");
            "reading the JSON reply failed"
        }
        Ok(Ok(collected)) => {
            let bytes = collected.to_bytes();
            if bytes.iter().all(u8::is_ascii_whitespace) && tracker.is_done() {
                return;
            }
            match mcp_jsonrpc::parse(&bytes) {
                Ok(body) => {
                    for msg in body {
                        if let Some(msg) = tracker.observe(&inner, &session, msg)
                            && !inner.deliver(Ok(msg)).await
                        {
                            return;
                        }
                    }
                    "the JSON reply did not hold the response"
                }
                Err(e) => {
                    tracing::warn!(error = %e, "server sent a JSON reply that is not JSON-RPC");
                    let error = Error::new(Kind::InvalidMessage).with(e);
                    if !inner.deliver(Err(error.into())).await {
                        return;
                    }
                    "the JSON reply was not JSON-RPC"
                }
            }
        }
    };
    tracker.give_up(&inner, reason).await;
}
