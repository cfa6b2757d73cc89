//! The per-request requests of a connection whose response has not come yet (M7): what a
//! `notifications/cancelled` can cancel.

use std::collections::HashMap;

use mcp_jsonrpc::Id;
use tokio::sync::oneshot;

/// The requests in flight, by the id the application gave them.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    next: u64,
    /// Dropping the sender cancels the request.
    requests: HashMap<Id, (u64, oneshot::Sender<()>)>,
}

/// A request's place among those in flight: its generation, and what hears its cancellation.
pub(crate) type Entry = (u64, oneshot::Receiver<()>);

impl InFlight {
    /// Enters the request `id`; `None` when another request in flight has the same id: only
    /// that one can be cancelled.
    pub(crate) fn enter(&mut self, id: &Id) -> Option<Entry> {
        if self.requests.contains_key(id) {
            return None;
        }
        self.next += 1;
        let (tx, rx) = oneshot::channel();
        self.requests.insert(id.clone(), (self.next, tx));
        Some((self.next, rx))
    }

    /// Cancels the request `id`; returns whether it was in flight.
    pub(crate) fn cancel(&mut self, id: &Id) -> bool {
        self.requests.remove(id).is_some()
    }

    /// The request `id` of `generation` is over.
    pub(crate) fn leave(&mut self, id: &Id, generation: u64) {
        if self.requests.get(id).is_some_and(|(g, _)| *g == generation) {
            self.requests.remove(id);
        }
    }
}
