//! What a node keeps of the streams it relays between a client and another node: the
//! standalone streams it reads for clients of other nodes (as holder), and the ones it follows
//! from the store for its own clients (as reader), each under a token.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;
use tokio::task::AbortHandle;

/// The relayed standalone streams of one node.
#[derive(Default)]
pub(crate) struct Relay {
    next_token: AtomicU64,
    /// As holder: the tasks draining a standalone stream another node's client reads from the
    /// store, by that node and its token.
    drains: Mutex<HashMap<(String, u64), AbortHandle>>,
    /// As reader: the standalone streams this node's clients read from the store, by token;
    /// the sender ends one when its holder says another reader took the stream over.
    follows: Mutex<HashMap<u64, oneshot::Sender<()>>>,
    /// Whether the task answering other nodes' envelopes runs.
    pub(crate) inbox_started: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Relay {
    pub(crate) fn add_drain(&self, node: String, token: u64, task: AbortHandle) {
        if let Some(old) = lock(&self.drains).insert((node, token), task) {
            old.abort();
        }
    }

    /// Ends the drain for `node`'s `token`; whether there was one.
    pub(crate) fn end_drain(&self, node: &str, token: u64) -> bool {
        let drain = lock(&self.drains).remove(&(node.to_owned(), token));
        drain.map(|d| d.abort()).is_some()
    }

    /// Forgets a drain that ended by itself.
    pub(crate) fn drained(&self, node: &str, token: u64) {
        lock(&self.drains).remove(&(node.to_owned(), token));
    }

    /// A standalone stream to be followed under a new token, registered before its holder is
    /// asked (whose answer to another reader may come at once); forgotten unless kept.
    pub(crate) fn follow(&self) -> Registered<'_> {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.follows).insert(token, tx);
        Registered {
            relay: self,
            token,
            moved: Some(rx),
        }
    }

    /// Ends the follow of `token`, if it is still on.
    pub(crate) fn moved(&self, token: u64) {
        if let Some(tx) = lock(&self.follows).remove(&token) {
            let _ = tx.send(());
        }
    }

    pub(crate) fn unfollow(&self, token: u64) {
        lock(&self.follows).remove(&token);
    }
}

/// A follow registered with [`Relay::follow`]: its token, and what fires when the holder says
/// the stream moved to another reader. Dropped without [`keep`](Registered::keep), it is
/// forgotten.
pub(crate) struct Registered<'a> {
    relay: &'a Relay,
    pub(crate) token: u64,
    moved: Option<oneshot::Receiver<()>>,
}

impl Registered<'_> {
    pub(crate) fn keep(mut self) -> (u64, oneshot::Receiver<()>) {
        let moved = self.moved.take().expect("kept once");
        (self.token, moved)
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if self.moved.is_some() {
            self.relay.unfollow(self.token);
        }
    }
}
