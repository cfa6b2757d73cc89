//! Which HTTP the configured endpoint speaks: HTTP/1.1 for plain `http` (HTTP/2 by prior
//! knowledge never comes here), and for `https` what the server chose by ALPN on the first
//! connection the [`Pool`](super::pool::Pool) opened.
//!
//! An origin that chose HTTP/1.1 is the pool's; one that chose HTTP/2 is hyper-util's, whose
//! client multiplexes it. That first connection is not wasted: it waits here, parked, until
//! hyper-util's connector ([`Counting`](super::stale::Counting)) asks for a connection to the
//! origin, which it does at once, for the request that found out. Only the first connection
//! is parked, and the pool's others wait for it to be made: no parked connection is left over
//! to go stale. A server that later switches to HTTP/2 gets its connection dropped and the
//! request sent through hyper-util, which connects again.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};

use http::Uri;
use mcp_http_client::Stream;
use tokio::sync::MutexGuard;

const UNKNOWN: u8 = 0;
const HTTP1: u8 = 1;
const HTTP2: u8 = 2;

/// What the configured endpoint's origin speaks, and its first connection while it waits for
/// hyper-util.
#[derive(Debug)]
pub(crate) struct Negotiation {
    origin: Uri,
    state: AtomicU8,
    /// Held while the first connection is made.
    first: tokio::sync::Mutex<()>,
    parked: Mutex<Option<Stream>>,
}

impl Negotiation {
    /// For the origin of `url`: HTTP/1.1 from the start when it is plain `http`.
    pub(crate) fn new(url: &Uri) -> Negotiation {
        let state = match url.scheme_str() {
            Some("https") => UNKNOWN,
            _ => HTTP1,
        };
        Negotiation {
            origin: url.clone(),
            state: AtomicU8::new(state),
            first: tokio::sync::Mutex::new(()),
            parked: Mutex::new(None),
        }
    }

    /// Whether the origin chose HTTP/2.
    pub(crate) fn is_http2(&self) -> bool {
        self.state.load(Ordering::Acquire) == HTTP2
    }

    /// While nobody knows what the origin speaks, the right to find out: the caller makes the
    /// first connection holding it, and the others wait. `None` once it is known.
    pub(crate) async fn first(&self) -> Option<MutexGuard<'_, ()>> {
        if self.state.load(Ordering::Acquire) != UNKNOWN {
            return None;
        }
        let guard = self.first.lock().await;
        (self.state.load(Ordering::Acquire) == UNKNOWN).then_some(guard)
    }

    /// What a new connection said: the stream back, for the pool, when it speaks HTTP/1.1;
    /// `None` when it chose HTTP/2, after parking it for hyper-util if it was the `first`.
    pub(crate) fn settle(&self, stream: Stream, first: bool) -> Option<Stream> {
        if !stream.is_h2() {
            // Only the first connection can find an unknown state.
            let _ =
                self.state
                    .compare_exchange(UNKNOWN, HTTP1, Ordering::AcqRel, Ordering::Acquire);
            return Some(stream);
        }
        tracing::debug!("the endpoint chose HTTP/2: its requests go through hyper-util's client");
        if first {
            *lock(&self.parked) = Some(stream);
        }
        self.state.store(HTTP2, Ordering::Release);
        None
    }

    /// The parked first connection, for hyper-util's connector asked for one to `uri`.
    pub(crate) fn take(&self, uri: &Uri) -> Option<Stream> {
        let same =
            uri.scheme() == self.origin.scheme() && uri.authority() == self.origin.authority();
        if !same {
            return None;
        }
        lock(&self.parked).take()
    }
}

fn lock(parked: &Mutex<Option<Stream>>) -> std::sync::MutexGuard<'_, Option<Stream>> {
    parked.lock().unwrap_or_else(PoisonError::into_inner)
}
