//! Forwarding envelopes between nodes over their inbox channels, and the answers back.
//!
//! A frame is one PUBLISH payload: a kind byte, the correlation number (8 bytes, big-endian),
//! the sending node's name (2-byte big-endian length, then the name) and the body.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::{BufMut, Bytes, BytesMut};
use mcp_streamable_server::Forwarded;
use tokio::sync::{mpsc, oneshot};

use crate::backend::Shared;
use crate::error::{Error, Kind};

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    /// An envelope for the receiving node's service.
    Envelope,
    /// The service's answer to an envelope.
    Answer,
    /// The receiving node's inbox was full: the envelope was not taken.
    Refused,
    /// The receiving node's service dropped the envelope unanswered.
    Unanswered,
}

impl FrameKind {
    fn byte(self) -> u8 {
        match self {
            FrameKind::Envelope => b'E',
            FrameKind::Answer => b'A',
            FrameKind::Refused => b'R',
            FrameKind::Unanswered => b'U',
        }
    }

    fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            b'E' => FrameKind::Envelope,
            b'A' => FrameKind::Answer,
            b'R' => FrameKind::Refused,
            b'U' => FrameKind::Unanswered,
            _ => return None,
        })
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Frame {
    kind: FrameKind,
    correlation: u64,
    node: String,
    body: Bytes,
}

impl Frame {
    fn encode(&self) -> Bytes {
        let node = self.node.as_bytes();
        let node = &node[..node.len().min(usize::from(u16::MAX))];
        let mut out = BytesMut::with_capacity(11 + node.len() + self.body.len());
        out.put_u8(self.kind.byte());
        out.put_u64(self.correlation);
        out.put_u16(node.len() as u16);
        out.put_slice(node);
        out.put_slice(&self.body);
        out.freeze()
    }

    fn decode(payload: &[u8]) -> Option<Frame> {
        let (&kind, rest) = payload.split_first()?;
        let kind = FrameKind::from_byte(kind)?;
        let (correlation, rest) = rest.split_first_chunk::<8>()?;
        let (len, rest) = rest.split_first_chunk::<2>()?;
        let len = usize::from(u16::from_be_bytes(*len));
        if rest.len() < len {
            return None;
        }
        let (node, body) = rest.split_at(len);
        Some(Frame {
            kind,
            correlation: u64::from_be_bytes(*correlation),
            node: std::str::from_utf8(node).ok()?.to_owned(),
            body: Bytes::copy_from_slice(body),
        })
    }
}

/// The answer a pending forward waits for.
type Pending = oneshot::Sender<Result<Bytes, Kind>>;

/// This node's forwards waiting for answers, and the inbox other nodes' envelopes go to.
#[derive(Debug)]
pub(crate) struct Forwards {
    next: AtomicU64,
    max_pending: usize,
    pending: Mutex<HashMap<u64, Pending>>,
    inbox: mpsc::Sender<Forwarded>,
}

/// Forgets a pending forward however its wait ends, timeout and cancellation included.
struct PendingGuard<'a> {
    forwards: &'a Forwards,
    correlation: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.forwards.lock().remove(&self.correlation);
    }
}

impl Forwards {
    pub(crate) fn new(inbox: mpsc::Sender<Forwarded>, max_pending: usize) -> Self {
        Forwards {
            next: AtomicU64::new(0),
            max_pending,
            pending: Mutex::new(HashMap::new()),
            inbox,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Hands `envelope` to `node` through its inbox channel and waits for the answer.
pub(crate) async fn forward(shared: &Shared, node: &str, envelope: Bytes) -> Result<Bytes, Error> {
    let forwards = &shared.forwards;
    let correlation = forwards.next.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = oneshot::channel();
    {
        let mut pending = forwards.lock();
        if pending.len() >= forwards.max_pending {
            return Err(Error::new(Kind::TooManyForwards));
        }
        pending.insert(correlation, tx);
    }
    let _guard = PendingGuard {
        forwards,
        correlation,
    };
    let frame = Frame {
        kind: FrameKind::Envelope,
        correlation,
        node: shared.options.node.clone(),
        body: envelope,
    };
    let receivers = publish(shared, node, &frame).await?;
    if receivers == 0 {
        return Err(Error::new(Kind::NodeGone));
    }
    match tokio::time::timeout(shared.options.forward_timeout, rx).await {
        Ok(Ok(Ok(answer))) => Ok(answer),
        Ok(Ok(Err(kind))) => Err(Error::new(kind)),
        Ok(Err(_)) => Err(Error::new(Kind::Unanswered)),
        Err(_) => Err(Error::new(Kind::ForwardTimeout)),
    }
}

/// PUBLISHes `frame` on `node`'s inbox; the number of subscribers that got it.
async fn publish(shared: &Shared, node: &str, frame: &Frame) -> Result<u64, Error> {
    let mut cmd = redis::cmd("PUBLISH");
    cmd.arg(shared.keys.inbox(node))
        .arg(frame.encode().as_ref());
    shared.query(&cmd).await
}

/// A message on this node's inbox channel: an envelope for the service, or an answer for a
/// pending forward.
pub(crate) fn on_inbox(shared: &Arc<Shared>, payload: &[u8]) {
    let Some(frame) = Frame::decode(payload) else {
        tracing::warn!(bytes = payload.len(), "malformed frame on the node's inbox");
        return;
    };
    let answer = match frame.kind {
        FrameKind::Envelope => return take_envelope(shared, frame),
        FrameKind::Answer => Ok(frame.body),
        FrameKind::Refused => Err(Kind::InboxFull),
        FrameKind::Unanswered => Err(Kind::Unanswered),
    };
    if let Some(pending) = shared.forwards.lock().remove(&frame.correlation) {
        let _ = pending.send(answer);
    }
}

/// Puts an envelope in the inbox, or refuses it at once if the inbox is full; a task sends
/// the service's answer back, waiting no longer than the sender does.
fn take_envelope(shared: &Arc<Shared>, frame: Frame) {
    let (tx, rx) = oneshot::channel();
    let reply = |kind, body| Frame {
        kind,
        correlation: frame.correlation,
        node: shared.options.node.clone(),
        body,
    };
    let shared = Arc::clone(shared);
    let sender = frame.node.clone();
    let taken = shared
        .forwards
        .inbox
        .try_send(Forwarded::new(frame.body.clone(), tx));
    let refused = taken
        .is_err()
        .then(|| reply(FrameKind::Refused, Bytes::new()));
    let unanswered = reply(FrameKind::Unanswered, Bytes::new());
    let correlation = frame.correlation;
    tokio::spawn(async move {
        let answer = match refused {
            Some(refused) => refused,
            None => match tokio::time::timeout(shared.options.forward_timeout, rx).await {
                Ok(Ok(body)) => Frame {
                    kind: FrameKind::Answer,
                    correlation,
                    node: shared.options.node.clone(),
                    body,
                },
                Ok(Err(_)) => unanswered,
                Err(_) => return,
            },
        };
        if let Err(error) = publish(&shared, &sender, &answer).await {
            tracing::debug!(%error, node = %sender, "could not answer a forwarded envelope");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_truncated_ones_are_refused() {
        let frame = Frame {
            kind: FrameKind::Answer,
            correlation: u64::MAX - 1,
            node: "node-é".to_owned(),
            body: Bytes::from_static(b"{\"jsonrpc\":\"2.0\"}"),
        };
        let bytes = frame.encode();
        assert_eq!(Frame::decode(&bytes), Some(frame));
        for cut in 0..13 {
            assert_eq!(Frame::decode(&bytes[..cut]), None, "{cut}");
        }
        assert_eq!(Frame::decode(b"Z\0\0\0\0\0\0\0\0\0\0"), None);
        let empty = Frame {
            kind: FrameKind::Refused,
            correlation: 0,
            node: String::new(),
            body: Bytes::new(),
        };
        assert_eq!(Frame::decode(&empty.encode()), Some(empty));
    }
}
