//! The bounded in-memory event store.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;

use mcp_jsonrpc::Id;

use super::{
    Begun, EventStore, ReplayError, StoreError, StoreFuture, StoredEvent, Unfinished, Write,
};
use crate::core::store::fence::Fence;

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

/// The forwards a session remembers ([`EventStore::begin`]), the oldest forgotten first: a
/// forward is sent again within seconds, if at all.
const FORWARDS_KEPT: usize = 1024;

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
    /// Numbers every event appended, across sessions, in the order appended.
    next_seq: u64,
    sessions: HashMap<Arc<str>, SessionLog>,
    /// Each session with events kept, by the number of its oldest: the first is the session
    /// holding the oldest event of the store, which goes first at the total cap. One entry per
    /// session, changed only when a session's oldest event goes.
    oldest: BTreeSet<(u64, Arc<str>)>,
}

/// One session's events, in the order appended: eviction takes the oldest, from the front.
#[derive(Debug)]
struct SessionLog {
    key: Arc<str>,
    bytes: usize,
    events: VecDeque<Kept>,
    /// The streams not finished yet: a handful, whatever the session's age. What is known of
    /// a finished one is read from `events`, on the rare replay, so that a session of a million
    /// requests (a stream each) keeps no bookkeeping per request.
    streams: HashMap<u64, StreamLog>,
    /// The highest stream that ever had an event: a finished one at or below it with nothing
    /// kept had all its events evicted.
    highest_stream: u64,
    /// Whether any event of the session was evicted: until one is, a gap in a finished stream's
    /// indices is one its writer left (a node taking the session over answers past any index
    /// its dead holder gave out), not a loss.
    evicted: bool,
    /// The forwards that began streams, and those streams, the latest [`FORWARDS_KEPT`].
    forwards: VecDeque<(Box<str>, u64)>,
}

#[derive(Debug)]
struct Kept {
    seq: u64,
    stream: u64,
    event: StoredEvent,
}

/// An open stream.
#[derive(Debug, Default)]
struct StreamLog {
    /// The highest index evicted, if any: a replay from before it would have a gap.
    evicted_through: Option<u64>,
    /// The highest index appended: a replay from after it names an event never sent.
    last: u64,
    /// The requests it began for (with a cluster only), and when it began among the session's
    /// streams.
    began: Option<(u64, Vec<Id>)>,
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
                next_seq: 0,
                sessions: HashMap::new(),
                oldest: BTreeSet::new(),
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

impl SessionLog {
    fn new(key: Arc<str>) -> Self {
        SessionLog {
            key,
            bytes: 0,
            events: VecDeque::new(),
            streams: HashMap::new(),
            highest_stream: 0,
            evicted: false,
            forwards: VecDeque::new(),
        }
    }

    fn oldest(&self) -> Option<u64> {
        self.events.front().map(|k| k.seq)
    }

    fn push(&mut self, seq: u64, stream: u64, event: StoredEvent) {
        self.bytes += cost(&event);
        self.highest_stream = self.highest_stream.max(stream);
        let slog = self.streams.entry(stream).or_default();
        slog.last = slog.last.max(event.index);
        self.events.push_back(Kept { seq, stream, event });
    }

    /// Drops the oldest event; returns its cost.
    fn evict_oldest(&mut self) -> Option<usize> {
        let Kept { stream, event, .. } = self.events.pop_front()?;
        self.evicted = true;
        if let Some(slog) = self.streams.get_mut(&stream) {
            slog.evicted_through = Some(event.index);
        }
        let size = cost(&event);
        self.bytes -= size;
        Some(size)
    }
}

/// The log of `session`, made if it has none yet.
fn log_of<'a>(
    sessions: &'a mut HashMap<Arc<str>, SessionLog>,
    session: &str,
) -> &'a mut SessionLog {
    if !sessions.contains_key(session) {
        let key: Arc<str> = Arc::from(session);
        sessions.insert(Arc::clone(&key), SessionLog::new(key));
    }
    sessions
        .get_mut(session)
        .expect("inserted above if missing")
}

impl Inner {
    /// An open stream with nothing appended yet: a replay after its priming id is empty, not
    /// purged.
    fn stream_opened(&mut self, session: &str, stream: u64) {
        log_of(&mut self.sessions, session)
            .streams
            .entry(stream)
            .or_default();
    }

    fn begin(
        &mut self,
        session: &str,
        stream: u64,
        requests: &[Id],
        forward: Option<&str>,
    ) -> Begun {
        let seq = self.next_seq;
        let log = log_of(&mut self.sessions, session);
        if let Some(forward) = forward {
            if let Some((_, first)) = log.forwards.iter().find(|(f, _)| &**f == forward) {
                return Begun::Again { stream: *first };
            }
            if log.forwards.len() == FORWARDS_KEPT {
                log.forwards.pop_front();
            }
            log.forwards.push_back((forward.into(), stream));
        }
        self.next_seq += 1;
        log.highest_stream = log.highest_stream.max(stream);
        log.streams.entry(stream).or_default().began = Some((seq, requests.to_vec()));
        Begun::New
    }

    fn unfinished(&self, session: &str) -> Vec<Unfinished> {
        let Some(log) = self.sessions.get(session) else {
            return Vec::new();
        };
        let mut began: Vec<(u64, Unfinished)> = log
            .streams
            .iter()
            .filter_map(|(stream, s)| {
                let (seq, requests) = s.began.as_ref()?;
                Some((*seq, Unfinished::new(*stream, requests.clone())))
            })
            .collect();
        began.sort_unstable_by_key(|(seq, _)| *seq);
        began.into_iter().map(|(_, u)| u).collect()
    }

    fn append(&mut self, session: &str, stream: u64, index: u64, message: Bytes) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let event = StoredEvent { index, message };
        let size = cost(&event);
        let log = log_of(&mut self.sessions, session);
        let before = log.oldest();
        log.push(seq, stream, event);
        self.total += size;
        while log.bytes > self.per_session {
            let Some(freed) = log.evict_oldest() else {
                break;
            };
            self.total -= freed;
        }
        let after = log.oldest();
        if before != after {
            let key = Arc::clone(&log.key);
            if let Some(before) = before {
                self.oldest.remove(&(before, Arc::clone(&key)));
            }
            if let Some(after) = after {
                self.oldest.insert((after, key));
            }
        }
        while self.total > self.total_cap {
            let Some((_, key)) = self.oldest.pop_first() else {
                break;
            };
            let Some(log) = self.sessions.get_mut(&key) else {
                continue;
            };
            if let Some(freed) = log.evict_oldest() {
                self.total -= freed;
            }
            if let Some(next) = log.oldest() {
                self.oldest.insert((next, key));
            }
        }
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
        let open = log.streams.get(&stream);
        if open.is_none() && stream > log.highest_stream {
            return Err(ReplayError::UnknownStream);
        }
        // A rare request (a reconnection), against a log bounded by the session's cap.
        let mut first = None;
        let mut last = None;
        let mut events = Vec::new();
        for kept in log.events.iter().filter(|k| k.stream == stream) {
            first.get_or_insert(kept.event.index);
            last = Some(kept.event.index);
            if kept.event.index > after {
                events.push(kept.event.clone());
            }
        }
        match open {
            Some(slog) if after > slog.last => Err(ReplayError::UnknownEvent),
            Some(slog) if slog.evicted_through.is_some_and(|e| e > after) => {
                Err(ReplayError::Purged)
            }
            Some(_) => Ok(events),
            // A finished stream: indices grow by one (but where a new holder answered a dead
            // one's requests), so once the session lost events the first kept tells whether any
            // after `after` is gone; with nothing kept, it all went.
            None => match (first, last) {
                (Some(first), _) if log.evicted && first > after.saturating_add(1) => {
                    Err(ReplayError::Purged)
                }
                (Some(_), Some(last)) if after > last => Err(ReplayError::UnknownEvent),
                (Some(_), _) => Ok(events),
                (None, _) => Err(ReplayError::Purged),
            },
        }
    }

    fn stream_finished(&mut self, session: &str, stream: u64) {
        if let Some(log) = self.sessions.get_mut(session) {
            log.streams.remove(&stream);
        }
    }

    fn close(&mut self, session: &str) {
        if let Some(log) = self.sessions.remove(session) {
            if let Some(oldest) = log.oldest() {
                self.oldest.remove(&(oldest, log.key));
            }
            self.total -= log.bytes;
        }
    }
}

impl Inner {
    fn write(&mut self, session: &str, writes: &[Write]) {
        for write in writes {
            match write {
                Write::Open { stream } => self.stream_opened(session, *stream),
                Write::Append {
                    stream,
                    index,
                    message,
                } => self.append(session, *stream, *index, message.clone()),
                // A finished stream may still be resumed by a client that lost its end; its
                // events go in age order like any other's, and its bookkeeping with the last of
                // them.
                Write::Finish { stream } => self.stream_finished(session, *stream),
            }
        }
    }
}

/// The in-memory store keeps the events of one process: it checks no fence (a store shared by
/// nodes must; `InMemoryNetwork`'s does).
impl EventStore for InMemoryEventStore {
    fn write<'a>(
        &'a self,
        session: &'a str,
        _fence: Option<Fence>,
        writes: &'a [Write],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.lock().write(session, writes);
        Box::pin(Stored)
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

    fn begin<'a>(
        &'a self,
        session: &'a str,
        _fence: Fence,
        stream: u64,
        requests: &'a [Id],
        forward: Option<&'a str>,
    ) -> StoreFuture<'a, Result<Begun, StoreError>> {
        let begun = self.lock().begin(session, stream, requests, forward);
        Box::pin(std::future::ready(Ok(begun)))
    }

    fn unfinished<'a>(
        &'a self,
        session: &'a str,
    ) -> StoreFuture<'a, Result<Vec<Unfinished>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.lock().unfinished(session))))
    }

    fn close<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.lock().close(session);
        Box::pin(Done)
    }
}

/// The answer of an operation done at once: zero-sized, so that boxing it allocates nothing
/// (`close` runs once per session).
struct Done;

impl Future for Done {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }
}

/// [`Done`], for `write`, which runs once or more per request.
struct Stored;

impl Future for Stored {
    type Output = Result<(), StoreError>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(()))
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
        // A closed session's events no longer count, and the oldest left goes next.
        s.close("a");
        s.append("d", 1, 0, msg(10));
        s.append("d", 1, 1, msg(10));
        s.append("d", 1, 2, msg(10));
        assert!(matches!(
            s.replay_after("b", 1, 0),
            Err(ReplayError::Purged)
        ));
        assert!(matches!(s.replay_after("c", 1, 0), Ok(ref v) if v.is_empty()));
        assert_eq!(s.total, 4 * (10 + EVENT_OVERHEAD));
        assert_eq!(s.oldest.len(), 2);
    }

    #[test]
    fn closing_a_session_frees_it_and_the_order_stays_bounded() {
        let store = InMemoryEventStore::new(2 * (1 + EVENT_OVERHEAD), 1 << 30);
        {
            let mut s = store.lock();
            for i in 0..100_000 {
                s.append("a", 1, i, msg(1));
            }
            assert_eq!(s.oldest.len(), 1);
            assert_eq!(s.sessions["a"].events.len(), 2);
        }
        assert_eq!(store.retained_bytes(), 2 * (1 + EVENT_OVERHEAD));
        store.lock().close("a");
        assert_eq!(store.retained_bytes(), 0);
        assert_eq!(store.session_count(), 0);
        assert!(store.lock().oldest.is_empty());
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

    #[test]
    fn a_finished_stream_is_replayed_from_what_is_kept_of_it() {
        let mut s = InMemoryEventStore::new(3 * (100 + EVENT_OVERHEAD), 1 << 30).lock_owned();
        for i in 1..=5 {
            s.append("a", 7, i, msg(100));
        }
        s.stream_finished("a", 7);
        // Kept: 3, 4, 5.
        let after = |s: &Inner, a| s.replay_after("a", 7, a).map(|v| v.len());
        assert!(matches!(after(&s, 2), Ok(3)));
        assert!(matches!(after(&s, 4), Ok(1)));
        assert!(matches!(after(&s, 5), Ok(0)));
        assert!(matches!(after(&s, 1), Err(ReplayError::Purged)));
        assert!(matches!(after(&s, 6), Err(ReplayError::UnknownEvent)));
        assert!(matches!(
            after(&s, u64::MAX),
            Err(ReplayError::UnknownEvent)
        ));
        assert!(matches!(
            s.replay_after("a", 8, 0),
            Err(ReplayError::UnknownStream)
        ));
        assert!(s.sessions["a"].streams.is_empty());
    }

    #[test]
    fn a_forward_begins_one_stream_however_often_it_is_sent() {
        let store = InMemoryEventStore::default();
        let mut s = store.lock();
        let ids = [Id::from(1)];
        assert_eq!(s.begin("a", 5, &ids, Some("f1")), Begun::New);
        assert_eq!(
            s.begin("a", 6, &ids, Some("f1")),
            Begun::Again { stream: 5 }
        );
        assert_eq!(s.begin("a", 7, &ids, None), Begun::New);
        assert_eq!(s.begin("b", 8, &ids, Some("f1")), Begun::New, "per session");
        let unfinished: Vec<u64> = s.unfinished("a").iter().map(|u| u.stream).collect();
        assert_eq!(unfinished, [5, 7], "the second send began nothing");
        for n in 0..FORWARDS_KEPT {
            s.begin("a", 100 + n as u64, &ids, Some(&format!("g{n}")));
        }
        assert_eq!(
            s.begin("a", 9, &ids, Some("f1")),
            Begun::New,
            "the oldest forgotten"
        );
    }

    impl InMemoryEventStore {
        fn lock_owned(self) -> Inner {
            Arc::try_unwrap(self.inner).unwrap().into_inner().unwrap()
        }
    }
}
