//! The writes a session owes its event store, in the order of its sends.
//!
//! A send that finds no writer at work makes its own writes (a [`Batch`], at most two) and
//! becomes the writer; one that finds a writer at work queues them behind it, and the writer
//! takes everything queued at once for its next write: one call of the store (one round trip
//! for a remote one) however many sends raced it. So the queue, and its buffer, exist only
//! while sends of one session race the store, and an idle session holds none.

use std::collections::VecDeque;

use crate::core::store::event_store::Write;

/// The writes of one send, in order: at most two (a message, and its stream's end), held in
/// place, so that the send that becomes the writer makes them without a buffer of their own.
pub(crate) enum Batch {
    Empty,
    One([Write; 1]),
    Two([Write; 2]),
}

impl Batch {
    pub(crate) fn one(write: Write) -> Batch {
        Batch::One([write])
    }

    pub(crate) fn two(first: Write, then: Option<Write>) -> Batch {
        match then {
            Some(then) => Batch::Two([first, then]),
            None => Batch::One([first]),
        }
    }

    pub(crate) fn empty() -> Batch {
        Batch::Empty
    }

    /// The writes, in order.
    pub(crate) fn as_slice(&self) -> &[Write] {
        match self {
            Batch::Empty => &[],
            Batch::One(writes) => writes,
            Batch::Two(writes) => writes,
        }
    }

    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
}

impl IntoIterator for Batch {
    type Item = Write;
    type IntoIter = std::iter::Flatten<std::array::IntoIter<Option<Write>, 2>>;

    fn into_iter(self) -> Self::IntoIter {
        let writes = match self {
            Batch::Empty => [None, None],
            Batch::One([write]) => [Some(write), None],
            Batch::Two([first, then]) => [Some(first), Some(then)],
        };
        writes.into_iter().flatten()
    }
}

/// The bytes of a write's message, what a queue of them holds.
fn size(write: &Write) -> usize {
    match write {
        Write::Append { message, .. } => message.len(),
        _ => 0,
    }
}

/// The writes queued behind the writer at work, and how far the writes have come.
#[derive(Default)]
pub(crate) struct StoreQueue {
    /// Only while sends race: boxed, so that an idle session holds one pointer for it where a
    /// bare `VecDeque` would take four words in every session.
    #[allow(clippy::box_collection)]
    writes: Option<Box<VecDeque<Write>>>,
    /// The bytes of the messages in `writes`.
    bytes: usize,
    /// A writer is at work.
    writing: bool,
    /// Tasks waiting for a watermark: the writer wakes them only when there are any.
    watched: u32,
    /// Writes ever handed over, and ever made (or given up on): the watermarks.
    queued: u64,
    written: u64,
}

impl StoreQueue {
    /// Takes the writes of a send: `Some` back when the caller is to make them itself, as the
    /// writer now; `None` when they wait behind the writer at work.
    pub(crate) fn submit(&mut self, batch: Batch) -> Option<Batch> {
        self.queued += batch.len();
        if self.writing {
            let writes = self.writes.get_or_insert_default();
            for write in batch {
                self.bytes += size(&write);
                writes.push_back(write);
            }
            return None;
        }
        self.writing = true;
        Some(batch)
    }

    /// The writer made `made` more writes; everything queued since, for its next write, or
    /// `None`: its turn ends, and the queue lets go of its buffer.
    pub(crate) fn next(&mut self, made: u64) -> Option<Vec<Write>> {
        self.written += made;
        self.bytes = 0;
        match self.writes.take() {
            Some(writes) if !writes.is_empty() => Some(Vec::from(*writes)),
            _ => {
                self.writing = false;
                None
            }
        }
    }

    /// A writer stopped midway after `made` writes: what it had not written goes first in
    /// line, for the next writer.
    pub(crate) fn hand_back(&mut self, made: u64, rest: impl DoubleEndedIterator<Item = Write>) {
        self.written += made;
        let writes = self.writes.get_or_insert_default();
        for write in rest.rev() {
            self.bytes += size(&write);
            writes.push_front(write);
        }
    }

    /// Gives up on everything not written: counted as written, so that no one waits for it.
    pub(crate) fn abandon(&mut self) {
        self.writes = None;
        self.bytes = 0;
        self.written = self.queued;
        self.writing = false;
    }

    /// The watermark of everything handed over so far.
    pub(crate) fn queued(&self) -> u64 {
        self.queued
    }

    /// The bytes of messages waiting behind the writer: past a bound, sends wait for the store.
    pub(crate) fn behind(&self) -> usize {
        self.bytes
    }

    pub(crate) fn has_written(&self, watermark: u64) -> bool {
        self.written >= watermark
    }

    pub(crate) fn watch(&mut self) {
        self.watched += 1;
    }

    pub(crate) fn unwatch(&mut self) {
        self.watched = self.watched.saturating_sub(1);
    }

    pub(crate) fn is_watched(&self) -> bool {
        self.watched > 0
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn append(index: u64) -> Write {
        Write::Append {
            stream: 1,
            index,
            message: Bytes::from_static(b"abc"),
        }
    }

    fn index(write: &Write) -> u64 {
        match write {
            Write::Append { index, .. } => *index,
            _ => u64::MAX,
        }
    }

    #[test]
    fn the_first_send_writes_its_own_and_the_writer_takes_the_rest_at_once() {
        let mut q = StoreQueue::default();
        let mine = q.submit(Batch::two(append(1), Some(Write::Finish { stream: 1 })));
        assert_eq!(mine.map(|b| b.into_iter().count()), Some(2));
        assert!(q.submit(Batch::one(append(2))).is_none());
        assert!(q.submit(Batch::one(append(3))).is_none());
        assert_eq!(q.behind(), 6);
        assert!(!q.has_written(4));
        let next: Vec<u64> = q.next(2).unwrap().iter().map(index).collect();
        assert_eq!(next, [2, 3], "one write for everything queued");
        assert_eq!(q.behind(), 0);
        assert!(q.next(2).is_none());
        assert!(q.has_written(4));
        assert!(q.writes.is_none(), "an idle queue holds no buffer");
        // The turn is over: the next send writes its own again.
        assert!(q.submit(Batch::one(append(4))).is_some());
    }

    #[test]
    fn writes_handed_back_go_first_in_line() {
        let mut q = StoreQueue::default();
        let mine = q.submit(Batch::two(append(1), Some(append(2)))).unwrap();
        assert!(q.submit(Batch::one(append(3))).is_none());
        let mut mine = mine.into_iter();
        let _in_flight = mine.next();
        q.hand_back(1, mine);
        let order: Vec<u64> = q.next(0).unwrap().iter().map(index).collect();
        assert_eq!(order, [2, 3]);
        q.abandon();
        assert!(q.has_written(q.queued()));
    }
}
