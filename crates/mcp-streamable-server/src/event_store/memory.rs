//! The bounded in-memory event store.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

use super::{EventStore, ReplayError, StoreError, StoreFuture, StoredEvent};

/// The bytes of messages one session may keep by default: 1 MiB.
///
/// Enough to resume a stream of progress notifications and a large tool result; a session
/// sending more than this between two reconnections loses its oldest messages.
pub const DEFAULT_MAX_STORE_BYTES_PER_SESSION: usize = 1024 * 1024;

/// The bytes of messages the whole store may keep by default: 256 MiB.
pub const DEFAULT_MAX_STORE_BYTES: usize = 256 * 1024 * 1024;

/// Bookkeeping charged per stored event on top of its bytes, so that floods of tiny messages
/// are bounded too.
const EVENT_OVERHEAD: usize = 64;

/// A bounded in-memory [`EventStore`]: the oldest events go first when a session or the whole
/// store is over its cap.
///
/// ```
/// use mcp_streamable_server::{Config, InMemoryEventStore};
///
/// let store = InMemoryEventStore::new(512 * 1024, 64 * 1024 * 1024);
/// let config = Config::default().event_store(store);
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct InMemoryEventStore {
    inner: Arc<Mutex<Inner>>,
}

impl Default for InMemoryEventStore {
    fn default() -> Self {
        InMemoryEventStore::new(DEFAULT_MAX_STORE_BYTES_PER_SESSION, DEFAULT_MAX_STORE_BYTES)
    }
}

#[derive(Debug)]
struct Inner {
    per_session: usize,
    total_cap: usize,
    total: usize,
    /// Events kept, across sessions.
    live: usize,
    /// Numbers every event appended, across sessions, in the order appended.
    next_seq: u64,
    sessions: HashMap<Arc<str>, SessionLog>,
    /// Every stored event in the order stored, across sessions, for eviction at the total cap.
    /// Entries whose event is already gone (evicted at its session's cap, or its session
    /// closed) are skipped when popped, and swept once they outnumber the live ones.
    order: VecDeque<(Arc<str>, u64)>,
}

/// One session's events, in the order appended: eviction takes the oldest, from the front.
#[derive(Debug, Default)]
struct SessionLog {
    bytes: usize,
    events: VecDeque<Kept>,
    /// The streams with events kept, or not finished: a finished stream's entry goes with its
    /// last event, so that a session of a million requests (a stream each) remembers only
    /// what it keeps.
    streams: HashMap<u64, StreamLog>,
    /// The highest stream that ever had an event: one at or below it that the store no longer
    /// knows had all its events evicted.
    highest_stream: u64,
}

#[derive(Debug)]
struct Kept {
    seq: u64,
    stream: u64,
    event: StoredEvent,
}

#[derive(Debug, Default)]
struct StreamLog {
    /// Events of the stream kept.
    kept: usize,
    /// The highest index evicted, if any: a replay from before it would have a gap.
    evicted_through: Option<u64>,
    /// The highest index appended: a replay from after it names an event never sent.
    last: u64,
    /// The stream got its last message.
    finished: bool,
}

fn cost(event: &StoredEvent) -> usize {
    event.message.len() + EVENT_OVERHEAD
}

impl InMemoryEventStore {
    /// A store keeping at most `per_session` bytes for one session and `total` for all.
    pub fn new(per_session: usize, total: usize) -> Self {
        InMemoryEventStore {
            inner: Arc::new(Mutex::new(Inner {
                per_session,
                total_cap: total,
                total: 0,
                live: 0,
                next_seq: 0,
                sessions: HashMap::new(),
                order: VecDeque::new(),
            })),
        }
    }

    /// The bytes kept now, bookkeeping included.
    pub fn retained_bytes(&self) -> usize {
        self.lock().total
    }

    /// The number of sessions with something kept.
    pub fn session_count(&self) -> usize {
        self.lock().sessions.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    fn append(&mut self, session: &str, stream: u64, index: u64, message: Bytes) {
        let event = StoredEvent { index, message };
        let size = cost(&event);
        let seq = self.next_seq;
        self.next_seq += 1;
        let key: Arc<str> = match self.sessions.get_key_value(session) {
            Some((k, _)) => Arc::clone(k),
            None => Arc::from(session),
        };
        let log = self.sessions.entry(Arc::clone(&key)).or_default();
        log.bytes += size;
        log.highest_stream = log.highest_stream.max(stream);
        let slog = log.streams.entry(stream).or_default();
        slog.kept += 1;
        slog.last = slog.last.max(index);
        log.events.push_back(Kept { seq, stream, event });
        self.total += size;
        self.live += 1;
        self.order.push_back((key, seq));
        while self
            .sessions
            .get(session)
            .is_some_and(|l| l.bytes > self.per_session)
        {
            self.evict_oldest_of(session);
        }
        while self.total > self.total_cap {
            let Some((s, seq)) = self.order.pop_front() else {
                break;
            };
            if self.is_live(&s, seq) {
                self.evict_oldest_of(&s);
            }
        }
        // Eviction at a session's cap and closed sessions leave stale entries in the global
        // order; sweep them once they outnumber the live ones, so that it stays proportional
        // to what is kept.
        if self.order.len() > 2 * self.live + 1024 {
            let sessions = &self.sessions;
            self.order
                .retain(|(s, seq)| Self::is_live_in(sessions, s, *seq));
        }
    }

    /// Whether event `seq` of `session` is still kept. A session evicts from the front only,
    /// so its events from the oldest kept on are all there.
    fn is_live(&self, session: &str, seq: u64) -> bool {
        Self::is_live_in(&self.sessions, session, seq)
    }

    fn is_live_in(sessions: &HashMap<Arc<str>, SessionLog>, session: &str, seq: u64) -> bool {
        sessions
            .get(session)
            .and_then(|l| l.events.front())
            .is_some_and(|oldest| oldest.seq <= seq)
    }

    fn evict_oldest_of(&mut self, session: &str) {
        let Some(log) = self.sessions.get_mut(session) else {
            return;
        };
        let Some(Kept { stream, event, .. }) = log.events.pop_front() else {
            return;
        };
        if let Some(slog) = log.streams.get_mut(&stream) {
            slog.kept -= 1;
            slog.evicted_through = Some(event.index);
            if slog.kept == 0 && slog.finished {
                log.streams.remove(&stream);
            }
        }
        let size = cost(&event);
        log.bytes -= size;
        self.total -= size;
        self.live -= 1;
    }

    fn replay_after(
        &self,
        session: &str,
        stream: u64,
        after: u64,
    ) -> Result<Vec<StoredEvent>, ReplayError> {
        let log = self
            .sessions
            .get(session)
            .ok_or(ReplayError::UnknownStream)?;
        let Some(slog) = log.streams.get(&stream) else {
            return Err(if stream <= log.highest_stream {
                ReplayError::Purged
            } else {
                ReplayError::UnknownStream
            });
        };
        if after > slog.last {
            return Err(ReplayError::UnknownEvent);
        }
        if slog.evicted_through.is_some_and(|e| e > after) {
            return Err(ReplayError::Purged);
        }
        // A rare request (a reconnection), against a log bounded by the session's cap.
        Ok(log
            .events
            .iter()
            .filter(|k| k.stream == stream && k.event.index > after)
            .map(|k| k.event.clone())
            .collect())
    }

    fn stream_finished(&mut self, session: &str, stream: u64) {
        if let Some(log) = self.sessions.get_mut(session)
            && let Some(slog) = log.streams.get_mut(&stream)
        {
            slog.finished = true;
            if slog.kept == 0 {
                log.streams.remove(&stream);
            }
        }
    }

    fn session_closed(&mut self, session: &str) {
        if let Some(log) = self.sessions.remove(session) {
            self.total -= log.bytes;
            self.live -= log.events.len();
        }
    }
}

impl EventStore for InMemoryEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        index: u64,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.lock().append(session, stream, index, message);
        Box::pin(std::future::ready(Ok(())))
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, ReplayError>> {
        Box::pin(std::future::ready(
            self.lock().replay_after(session, stream, after),
        ))
    }

    fn stream_finished<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        // A finished stream may still be resumed by a client that lost its end; its events go
        // in age order like any other's, and its bookkeeping with the last of them.
        self.lock().stream_finished(session, stream);
        Box::pin(std::future::ready(()))
    }

    fn session_closed<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.lock().session_closed(session);
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(n: usize) -> Bytes {
        Bytes::from(vec![b'x'; n])
    }

    #[test]
    fn replays_after_an_index_in_order() {
        let mut s = InMemoryEventStore::default().lock_owned();
        for i in 0..5 {
            s.append("a", 1, i, msg(10));
        }
        let got: Vec<u64> = s
            .replay_after("a", 1, 2)
            .unwrap()
            .iter()
            .map(|e| e.index)
            .collect();
        assert_eq!(got, [3, 4]);
        assert!(s.replay_after("a", 1, 4).unwrap().is_empty());
        assert!(matches!(
            s.replay_after("a", 1, 5),
            Err(ReplayError::UnknownEvent)
        ));
        assert!(matches!(
            s.replay_after("a", 2, 0),
            Err(ReplayError::UnknownStream)
        ));
        assert!(matches!(
            s.replay_after("b", 1, 0),
            Err(ReplayError::UnknownStream)
        ));
    }

    #[test]
    fn the_session_cap_evicts_oldest_first_and_reports_purged() {
        let mut s = InMemoryEventStore::new(3 * (100 + EVENT_OVERHEAD), 1 << 30).lock_owned();
        for i in 0..10 {
            s.append("a", 1, i, msg(100));
        }
        assert_eq!(s.sessions["a"].bytes, 3 * (100 + EVENT_OVERHEAD));
        let kept: Vec<u64> = s
            .replay_after("a", 1, 6)
            .unwrap()
            .iter()
            .map(|e| e.index)
            .collect();
        assert_eq!(kept, [7, 8, 9]);
        assert!(matches!(
            s.replay_after("a", 1, 5),
            Err(ReplayError::Purged)
        ));
    }

    #[test]
    fn the_total_cap_evicts_across_sessions_oldest_first() {
        let mut s = InMemoryEventStore::new(1 << 30, 4 * (10 + EVENT_OVERHEAD)).lock_owned();
        s.append("a", 1, 0, msg(10));
        s.append("b", 1, 0, msg(10));
        s.append("a", 1, 1, msg(10));
        s.append("b", 1, 1, msg(10));
        s.append("c", 1, 0, msg(10));
        assert_eq!(s.total, 4 * (10 + EVENT_OVERHEAD));
        assert!(matches!(s.replay_after("a", 1, 0), Ok(ref v) if v.len() == 1));
        assert!(matches!(s.replay_after("b", 1, 0), Ok(ref v) if v.len() == 1));
    }

    #[test]
    fn closing_a_session_frees_it_and_the_order_stays_bounded() {
        let store = InMemoryEventStore::new(2 * (1 + EVENT_OVERHEAD), 1 << 30);
        {
            let mut s = store.lock();
            for i in 0..100_000 {
                s.append("a", 1, i, msg(1));
            }
            assert!(s.order.len() <= 2 * 2 + 1024 + 1, "{}", s.order.len());
        }
        assert_eq!(store.retained_bytes(), 2 * (1 + EVENT_OVERHEAD));
        store.lock().session_closed("a");
        assert_eq!(store.retained_bytes(), 0);
        assert_eq!(store.session_count(), 0);
    }

    #[test]
    fn a_long_session_of_many_streams_keeps_bookkeeping_for_what_it_keeps_only() {
        // Every request of a session gets a stream of its own: after a million requests the
        // store must remember no more streams than it keeps events of.
        let mut s = InMemoryEventStore::new(10 * (100 + EVENT_OVERHEAD), 1 << 30).lock_owned();
        for stream in 1..=100_000 {
            s.append("a", stream, 1, msg(100));
            s.stream_finished("a", stream);
        }
        assert!(
            s.sessions["a"].streams.len() <= 10,
            "{}",
            s.sessions["a"].streams.len()
        );
        assert!(matches!(s.replay_after("a", 100_000, 0), Ok(ref v) if v.len() == 1));
        assert!(matches!(
            s.replay_after("a", 5, 0),
            Err(ReplayError::Purged)
        ));
        assert!(matches!(
            s.replay_after("a", 100_001, 0),
            Err(ReplayError::UnknownStream)
        ));
    }

    #[test]
    fn a_live_stream_read_to_its_end_resumes_though_its_events_were_evicted() {
        let mut s = InMemoryEventStore::new(2 * (100 + EVENT_OVERHEAD), 1 << 30).lock_owned();
        s.append("a", 0, 1, msg(100));
        s.append("a", 0, 2, msg(100));
        for stream in 1..=10 {
            s.append("a", stream, 1, msg(100));
            s.stream_finished("a", stream);
        }
        // The standalone stream lives on: the client read through index 2 and has missed
        // nothing, though neither event is kept.
        assert!(matches!(s.replay_after("a", 0, 2), Ok(ref v) if v.is_empty()));
        assert!(matches!(
            s.replay_after("a", 0, 1),
            Err(ReplayError::Purged)
        ));
        assert!(matches!(
            s.replay_after("a", 0, 3),
            Err(ReplayError::UnknownEvent)
        ));
        assert!(
            s.sessions["a"].streams.len() <= 3,
            "{}",
            s.sessions["a"].streams.len()
        );
    }

    impl InMemoryEventStore {
        fn lock_owned(self) -> Inner {
            Arc::try_unwrap(self.inner).unwrap().into_inner().unwrap()
        }
    }
}
