//! The live watches of one node, by session: what the pub/sub task subscribes to, and where
//! it and the liveness poller send their news.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use mcp_streamable_server::{Change, Watch};
use tokio::sync::mpsc;

/// The changes one watch may have waiting: a watcher reads the store afresh on each, so more
/// would only repeat themselves; two let a lost holder pass one pending write.
const WATCH_CAPACITY: usize = 2;

/// The watches of this node, by session.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    sessions: Mutex<HashMap<String, Vec<Watcher>>>,
}

#[derive(Debug)]
struct Watcher {
    changes: mpsc::Sender<Change>,
    holder: String,
    /// Whether this watch was told its holder lapsed: it is told once.
    told_lost: bool,
}

impl Watches {
    /// A new watch of `session` believing `holder` holds it; `true` with it when the session
    /// had no watch yet, so that its channel must be subscribed.
    pub(crate) fn add(&self, session: &str, holder: &str) -> (Watch, bool) {
        let (tx, rx) = mpsc::channel(WATCH_CAPACITY);
        let mut sessions = self.lock();
        let watchers = sessions.entry(session.to_owned()).or_default();
        watchers.retain(|w| !w.changes.is_closed());
        let first = watchers.is_empty();
        watchers.push(Watcher {
            changes: tx,
            holder: holder.to_owned(),
            told_lost: false,
        });
        (rx, first)
    }

    /// `stream` of `session` was written to: every watch of it is told, unless it has a change
    /// waiting already.
    pub(crate) fn written(&self, session: &str, stream: u64) {
        if let Some(watchers) = self.lock().get_mut(session) {
            watchers.retain(|w| !w.changes.is_closed());
            for watcher in watchers.iter() {
                let _ = watcher.changes.try_send(Change::Written { stream });
            }
        }
    }

    /// The lease of `holder` lapsed: every watch naming it is told, once.
    pub(crate) fn holder_lost(&self, holder: &str) {
        for watchers in self.lock().values_mut() {
            for watcher in watchers.iter_mut().filter(|w| w.holder == holder) {
                if !watcher.told_lost && watcher.changes.try_send(Change::HolderLost).is_ok() {
                    watcher.told_lost = true;
                }
            }
        }
    }

    /// News may have been missed (the pub/sub connection was lost): every watch is told to
    /// locate its session again, which reads the store afresh.
    pub(crate) fn news_lost(&self) {
        for watchers in self.lock().values() {
            for watcher in watchers {
                let _ = watcher.changes.try_send(Change::HolderLost);
            }
        }
    }

    /// The distinct holders named by watches not yet told their holder lapsed.
    pub(crate) fn holders(&self) -> HashSet<String> {
        self.lock()
            .values()
            .flatten()
            .filter(|w| !w.told_lost && !w.changes.is_closed())
            .map(|w| w.holder.clone())
            .collect()
    }

    /// Forgets dropped watches; `true` if a session lost its last one.
    pub(crate) fn prune(&self) -> bool {
        let mut sessions = self.lock();
        let before = sessions.len();
        sessions.retain(|_, watchers| {
            watchers.retain(|w| !w.changes.is_closed());
            !watchers.is_empty()
        });
        sessions.len() != before
    }

    /// The sessions with a live watch: the channels to be subscribed.
    pub(crate) fn sessions(&self) -> HashSet<String> {
        self.prune();
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<Watcher>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_coalesce_and_a_lost_holder_is_told_once() {
        let watches = Watches::default();
        let (mut a, first) = watches.add("s", "n1");
        assert!(first);
        let (mut b, first) = watches.add("s", "n2");
        assert!(!first);
        for stream in 0..10 {
            watches.written("s", stream);
        }
        assert_eq!(a.try_recv().unwrap(), Change::Written { stream: 0 });
        assert_eq!(a.try_recv().unwrap(), Change::Written { stream: 1 });
        assert!(a.try_recv().is_err());
        assert_eq!(b.try_recv().unwrap(), Change::Written { stream: 0 });
        assert_eq!(b.try_recv().unwrap(), Change::Written { stream: 1 });
        assert_eq!(
            watches.holders(),
            HashSet::from(["n1".to_owned(), "n2".to_owned()])
        );
        watches.holder_lost("n1");
        watches.holder_lost("n1");
        assert_eq!(a.try_recv().unwrap(), Change::HolderLost);
        assert!(a.try_recv().is_err());
        assert!(b.try_recv().is_err());
        assert_eq!(watches.holders(), HashSet::from(["n2".to_owned()]));
    }

    #[test]
    fn a_lost_holder_waits_for_room_rather_than_being_dropped() {
        let watches = Watches::default();
        let (mut a, _) = watches.add("s", "n1");
        watches.written("s", 1);
        watches.written("s", 2);
        watches.holder_lost("n1");
        assert_eq!(watches.holders().len(), 1, "not told yet: asked again");
        a.try_recv().unwrap();
        watches.holder_lost("n1");
        a.try_recv().unwrap();
        assert_eq!(a.try_recv().unwrap(), Change::HolderLost);
    }

    #[test]
    fn dropped_watches_are_pruned_with_their_session() {
        let watches = Watches::default();
        let (a, _) = watches.add("s", "n1");
        let (b, _) = watches.add("t", "n1");
        assert!(!watches.prune());
        drop(a);
        assert!(watches.prune());
        assert_eq!(watches.sessions(), HashSet::from(["t".to_owned()]));
        drop(b);
        assert!(watches.sessions().is_empty());
        let (_c, first) = watches.add("s", "n1");
        assert!(first);
    }
}
