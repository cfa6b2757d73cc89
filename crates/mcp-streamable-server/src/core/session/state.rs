//! What a session holds behind its lock: the streams, their outboxes and readers, the requests
//! in flight, and the one count of buffered bytes.
//!
//! Counters are owned, not edited by hand: the session's buffered bytes change only through an
//! [`Outbox`]'s methods, which move each message's size in and out of [`Buffered`] together
//! with the message; whether a stream has a reader is the reader's presence itself, so the
//! number of attached readers is derived ([`State::attached`]), never counted.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

pub(crate) use crate::core::store::queue::{Batch, StoreQueue};
use std::task::{Context, Waker};

use bytes::Bytes;
use mcp_jsonrpc::{Body, Id};
use mcp_transport::Received;
use tokio::sync::mpsc;

use crate::core::budget::{Budget, Charge};
use crate::core::cluster::Fence;
use crate::protocol::ProtocolVersion;

/// The standalone stream, read by GET (S10). Request streams are numbered from 1.
pub(crate) const STANDALONE: u64 = 0;

/// One outgoing message, waiting to be written.
pub(crate) struct Entry {
    pub(crate) index: u64,
    pub(crate) json: Bytes,
    pub(crate) is_response: bool,
}

/// The readers to wake once a session's lock is released: mostly one (the reader of the stream
/// a message went on), kept in place; more only when a send sheds others' backlogs.
#[derive(Default)]
pub(crate) struct Wakers {
    first: Option<Waker>,
    rest: Vec<Waker>,
}

impl Wakers {
    /// Wakes them all.
    pub(crate) fn wake(self) {
        self.first
            .into_iter()
            .chain(self.rest)
            .for_each(Waker::wake);
    }
}

impl Extend<Waker> for Wakers {
    fn extend<I: IntoIterator<Item = Waker>>(&mut self, wakers: I) {
        for waker in wakers {
            match self.first {
                None => self.first = Some(waker),
                Some(_) => self.rest.push(waker),
            }
        }
    }
}

/// The bytes waiting in a session's outboxes: the sum of its outboxes' sizes (S22).
///
/// Only [`Outbox`] changes it, by the size of the message it takes in or lets go, so it cannot
/// drift from the messages it counts. An underflow would be a bug in that pairing: debug builds
/// stop on it, release builds saturate rather than wrap, so that a session is never taken for
/// holding 2^64 bytes and shed forever.
///
/// It moves the server-wide sum ([`Budget`]) with its own, and gives its share back when the
/// session's state goes.
pub(crate) struct Buffered {
    own: usize,
    budget: Arc<Budget>,
}

impl Buffered {
    pub(crate) fn new(budget: Arc<Budget>) -> Self {
        Buffered { own: 0, budget }
    }

    pub(crate) fn get(&self) -> usize {
        self.own
    }

    fn add(&mut self, n: usize) {
        self.own += n;
        self.budget.add(n);
    }

    fn sub(&mut self, n: usize) {
        debug_assert!(
            self.own >= n,
            "buffered bytes underflow: {} - {n}",
            self.own
        );
        let n = n.min(self.own);
        self.own -= n;
        self.budget.sub(n);
    }
}

impl Drop for Buffered {
    fn drop(&mut self) {
        self.budget.sub(self.own);
    }
}

#[cfg(test)]
impl Default for Buffered {
    fn default() -> Self {
        Buffered::new(Arc::new(Budget::new(usize::MAX)))
    }
}

/// The messages of one stream waiting for its reader, and their size.
///
/// The first is kept in place: a request stream mostly holds one message at a time (its
/// answer), which then costs no buffer of its own.
#[derive(Default)]
pub(crate) struct Outbox {
    /// The message its reader writes next; `None` only when the outbox is empty.
    head: Option<Entry>,
    /// The messages after it.
    rest: VecDeque<Entry>,
    bytes: usize,
}

impl Outbox {
    pub(crate) fn push(&mut self, entry: Entry, total: &mut Buffered) {
        self.bytes += entry.json.len();
        total.add(entry.json.len());
        if self.head.is_none() {
            self.head = Some(entry);
        } else {
            self.rest.push_back(entry);
        }
    }

    pub(crate) fn pop(&mut self, total: &mut Buffered) -> Option<Entry> {
        let entry = self.head.take()?;
        self.head = self.rest.pop_front();
        self.bytes -= entry.json.len();
        total.sub(entry.json.len());
        Some(entry)
    }

    /// Lets go of everything; returns how many messages that was.
    pub(crate) fn clear(&mut self, total: &mut Buffered) -> usize {
        let n = self.len();
        total.sub(self.bytes);
        self.bytes = 0;
        self.head = None;
        self.rest.clear();
        n
    }

    /// Shrinks everything behind the first entry (which its reader writes next): each entry
    /// `shrink` gives a smaller stand-in for is replaced by it, every other one is dropped.
    /// Returns how many entries were dropped; frees what it can from the count.
    pub(crate) fn shrink_backlog(
        &mut self,
        total: &mut Buffered,
        shrink: impl Fn(&Entry) -> Option<Bytes>,
    ) -> usize {
        let before = self.bytes;
        let mut dropped = 0;
        let mut kept = VecDeque::with_capacity(self.rest.len());
        for mut entry in self.rest.drain(..) {
            match shrink(&entry) {
                Some(smaller) if smaller.len() <= entry.json.len() => {
                    self.bytes -= entry.json.len() - smaller.len();
                    entry.json = smaller;
                    kept.push_back(entry);
                }
                Some(_) => kept.push_back(entry),
                None => {
                    self.bytes -= entry.json.len();
                    dropped += 1;
                }
            }
        }
        self.rest = kept;
        total.sub(before - self.bytes);
        dropped
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    pub(crate) fn front(&self) -> Option<&Entry> {
        self.head.as_ref()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.head.iter().chain(&self.rest)
    }
}

/// The connection reading a stream: an SSE body or a JSON-mode POST waiting for its answer.
/// A newer one replaces it (S12); the generation tells the old one it was replaced.
struct Conn {
    generation: u64,
    waker: Option<Waker>,
}

pub(crate) struct Stream {
    pub(crate) standalone: bool,
    /// Requests of this stream not answered yet.
    pub(crate) pending: usize,
    pub(crate) next_index: u64,
    pub(crate) outbox: Outbox,
    conn: Option<Conn>,
    /// Every request of the stream has its response queued: the stream ends once written.
    pub(crate) finished: bool,
    /// Whether its client holds an event id of this stream to resume from: its priming
    /// event's, or one a reader took with a store on.
    pub(crate) id_given: bool,
    /// The id of the forward that carried its requests from another node, if one did: a
    /// forward sent again finds its stream by it.
    pub(crate) forward: Option<Box<str>>,
}

impl Stream {
    /// A stream whose first message gets index `first` (1 when index 0 is a priming event's).
    pub(crate) fn new(standalone: bool, first: u64) -> Self {
        Stream {
            standalone,
            pending: 0,
            next_index: first,
            outbox: Outbox::default(),
            conn: None,
            finished: false,
            id_given: false,
            forward: None,
        }
    }

    /// Makes `generation` the stream's reader; returns the waker of the one it replaces, which
    /// must be woken (after the lock is released) so that it ends.
    pub(crate) fn attach(&mut self, generation: u64) -> Option<Waker> {
        let old = self.conn.replace(Conn {
            generation,
            waker: None,
        });
        old.and_then(|c| c.waker)
    }

    pub(crate) fn is_read(&self) -> bool {
        self.conn.is_some()
    }

    pub(crate) fn is_read_by(&self, generation: u64) -> bool {
        self.conn
            .as_ref()
            .is_some_and(|c| c.generation == generation)
    }

    pub(crate) fn take_waker(&mut self) -> Option<Waker> {
        self.conn.as_mut().and_then(|c| c.waker.take())
    }

    /// Remembers to wake the reader's task when something comes.
    pub(crate) fn register(&mut self, cx: &Context<'_>) {
        if let Some(conn) = &mut self.conn
            && !conn.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
        {
            conn.waker = Some(cx.waker().clone());
        }
    }

    /// Lets go of the reader: `Some(its waker, to wake)` if there was one.
    pub(crate) fn detach_reader(&mut self) -> Option<Option<Waker>> {
        self.conn.take().map(|c| c.waker)
    }

    /// The index of the oldest message waiting for a reader, if any.
    pub(crate) fn first_queued(&self) -> Option<u64> {
        self.outbox.front().map(|e| e.index)
    }

    /// For a closing session: a stream whose reader has messages still to write stays, to end
    /// once they are written (true); any other goes (false).
    pub(crate) fn flush(&mut self) -> bool {
        if self.conn.is_some() && !self.outbox.is_empty() {
            self.finished = true;
            return true;
        }
        false
    }

    /// The bytes this stream holds beyond what its reader will write next: a connected reader
    /// about to write one large message is not behind, whatever the message's size (S22).
    pub(crate) fn backlog(&self) -> usize {
        match (&self.conn, self.outbox.front()) {
            (Some(_), Some(next)) => self.outbox.bytes() - next.json.len(),
            _ => self.outbox.bytes(),
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.finished && self.conn.is_none() && self.outbox.is_empty()
    }
}

/// The channel of a session's messages to its application, each with the HTTP request that
/// carried it. Boxed: a channel allocates its first block of 32 slots up front, and 32 messages
/// take 2.5 KiB where 32 boxes take 256 bytes, which idle sessions would otherwise each hold.
pub(crate) type Incoming = mpsc::Sender<Box<Delivery>>;

/// A message on its way to the application, holding its share of its POST's charge of the
/// incoming budget until taken.
pub(crate) struct Delivery {
    pub(crate) received: Received,
    /// Never read: held for its `Drop`, which gives the bytes back to the budget once the
    /// application has taken the message.
    #[expect(dead_code, reason = "held for its Drop")]
    pub(crate) charge: Option<Charge>,
}

/// A POST's messages as the core takes them: the body, the parts of the HTTP request that
/// carried it, and its charge of the incoming budget (S22).
pub(crate) struct Posted {
    pub(crate) request: Arc<http::request::Parts>,
    pub(crate) body: Body,
    pub(crate) charge: Charge,
}

impl Posted {
    pub(crate) fn new(request: Arc<http::request::Parts>, body: Body, charge: Charge) -> Self {
        Posted {
            request,
            body,
            charge,
        }
    }
}

/// A session's channel to its application, holding at most `capacity` messages.
pub(crate) fn incoming_channel(capacity: usize) -> (Incoming, mpsc::Receiver<Box<Delivery>>) {
    mpsc::channel(capacity)
}

pub(crate) struct State {
    pub(crate) closed: bool,
    /// The negotiated protocol version, once the initialize result told it.
    pub(crate) version: ProtocolVersion,
    /// Whether `version` was negotiated (rather than assumed, S8).
    pub(crate) negotiated: bool,
    pub(crate) init_request: Option<Id>,
    pub(crate) incoming: Option<Incoming>,
    pub(crate) next_stream: u64,
    pub(crate) streams: HashMap<u64, Stream>,
    /// Requests in flight: which stream their response goes on.
    pub(crate) inflight: HashMap<Id, u64>,
    /// Bytes waiting in outboxes, across streams.
    pub(crate) buffered: Buffered,
    next_generation: u64,
    /// What is still to be written to the event store, in order.
    pub(crate) store_queue: StoreQueue,
    /// With a cluster, the session's holding: every write of it carries this fence, and
    /// nothing is delivered or read while this node's lease does not hold it. A lapsed lease
    /// that came back under a new incarnation replaces it (reclaimed).
    pub(crate) fence: Option<Fence>,
}

impl State {
    pub(crate) fn new(
        version: ProtocolVersion,
        incoming: Incoming,
        budget: Arc<Budget>,
        fence: Option<Fence>,
    ) -> Self {
        State {
            closed: false,
            version,
            negotiated: false,
            init_request: None,
            incoming: Some(incoming),
            next_stream: STANDALONE + 1,
            streams: HashMap::new(),
            inflight: HashMap::new(),
            buffered: Buffered::new(budget),
            next_generation: 0,
            store_queue: StoreQueue::default(),
            fence,
        }
    }

    pub(crate) fn new_generation(&mut self) -> u64 {
        self.next_generation += 1;
        self.next_generation
    }

    /// How many streams have a reader (SSE bodies, JSON waiters): derived, never counted.
    pub(crate) fn attached(&self) -> usize {
        self.streams.values().filter(|s| s.is_read()).count()
    }

    /// The stream a forward began here, while it lives.
    pub(crate) fn stream_of_forward(&self, forward: &str) -> Option<u64> {
        self.streams
            .iter()
            .find(|(_, s)| s.forward.as_deref() == Some(forward))
            .map(|(stream, _)| *stream)
    }

    /// Forgets a stream registered for requests that never got them delivered.
    pub(crate) fn abandon(&mut self, stream: u64) {
        if self
            .init_request
            .as_ref()
            .is_some_and(|id| self.inflight.get(id) == Some(&stream))
        {
            self.init_request = None;
        }
        self.inflight.retain(|_, s| *s != stream);
        if let Some(mut s) = self.streams.remove(&stream) {
            s.outbox.clear(&mut self.buffered);
        }
    }

    /// Ends the reader of `stream`, if it has one: `Some(waker to wake)`. What it had not read
    /// stays in the event store, so the client can resume.
    pub(crate) fn disconnect(&mut self, stream: u64) -> Option<Option<Waker>> {
        let s = self.streams.get_mut(&stream)?;
        let waker = s.detach_reader()?;
        s.outbox.clear(&mut self.buffered);
        Some(waker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, len: usize) -> Entry {
        Entry {
            index,
            json: Bytes::from(vec![b'x'; len]),
            is_response: false,
        }
    }

    #[test]
    fn the_buffered_count_moves_with_the_messages() {
        let mut total = Buffered::default();
        let mut a = Outbox::default();
        let mut b = Outbox::default();
        a.push(entry(1, 10), &mut total);
        a.push(entry(2, 20), &mut total);
        b.push(entry(1, 5), &mut total);
        assert_eq!((total.get(), a.bytes(), b.bytes()), (35, 30, 5));
        assert_eq!(a.pop(&mut total).map(|e| e.index), Some(1));
        assert_eq!(total.get(), 25);
        assert_eq!(a.clear(&mut total), 1);
        assert_eq!(b.clear(&mut total), 1);
        assert_eq!((total.get(), a.bytes(), b.bytes()), (0, 0, 0));
        assert!(a.pop(&mut total).is_none());
    }

    #[test]
    fn shrinking_a_backlog_keeps_the_next_entry_and_the_count_true() {
        let mut total = Buffered::default();
        let mut other = Outbox::default();
        other.push(entry(9, 7), &mut total);
        let mut a = Outbox::default();
        for (index, len) in [(1, 100), (2, 100), (3, 4), (4, 100)] {
            a.push(entry(index, len), &mut total);
        }
        // Entries 2 and 4 shrink to their 10-byte stand-ins, 3 (smaller than its stand-in)
        // stays as it is; the first is never touched.
        let dropped = a.shrink_backlog(&mut total, |_| Some(Bytes::from_static(b"0123456789")));
        assert_eq!(dropped, 0);
        let lens: Vec<usize> = a.iter().map(|e| e.json.len()).collect();
        assert_eq!(lens, [100, 10, 4, 10]);
        assert_eq!((a.bytes(), total.get()), (124, 131));
        assert_eq!(a.shrink_backlog(&mut total, |_| None), 3);
        assert_eq!((a.bytes(), total.get()), (100, 107));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "underflow")]
    fn an_underflow_is_caught_in_debug_builds() {
        let mut total = Buffered::default();
        total.add(1);
        total.sub(2);
    }

    #[test]
    fn attached_readers_are_derived_from_the_streams() {
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        let budget = Arc::new(Budget::new(usize::MAX));
        let mut st = State::new(ProtocolVersion::V2025_11_25, tx, budget, None);
        let mut s = Stream::new(false, 1);
        s.attach(st.new_generation());
        st.streams.insert(1, s);
        st.streams.insert(2, Stream::new(false, 1));
        assert_eq!(st.attached(), 1);
        assert!(st.disconnect(1).is_some());
        assert!(st.disconnect(2).is_none());
        assert_eq!(st.attached(), 0);
    }
}
