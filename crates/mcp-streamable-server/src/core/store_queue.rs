//! The writes a session owes its event store, in the order of its sends.
//!
//! A send that finds no writer at work writes its own writes (a [`Batch`], at most two) and
//! becomes the writer; one that finds a writer at work queues them behind it. So the queue, and
//! its buffer, exist only while sends of one session race each other, and an idle session
//! holds none.

use std::collections::VecDeque;

use bytes::Bytes;

/// One write to the event store.
pub(crate) enum StoreOp {
    Append {
        stream: u64,
        index: u64,
        json: Bytes,
    },
    Finished {
        stream: u64,
    },
    Opened {
        stream: u64,
    },
    /// With a cluster: a request stream opened for these requests.
    Began {
        stream: u64,
        requests: Vec<mcp_jsonrpc::Id>,
    },
}

impl StoreOp {
    pub(crate) fn stream(&self) -> u64 {
        match self {
            StoreOp::Append { stream, .. }
            | StoreOp::Finished { stream }
            | StoreOp::Opened { stream }
            | StoreOp::Began { stream, .. } => *stream,
        }
    }
}

/// The writes of one send, in order: at most two (a message, and its stream's end).
pub(crate) struct Batch([Option<StoreOp>; 2]);

impl Batch {
    pub(crate) fn one(op: StoreOp) -> Batch {
        Batch([Some(op), None])
    }

    pub(crate) fn two(first: StoreOp, then: Option<StoreOp>) -> Batch {
        Batch([Some(first), then])
    }

    pub(crate) fn empty() -> Batch {
        Batch([None, None])
    }

    fn len(&self) -> u64 {
        self.0.iter().filter(|op| op.is_some()).count() as u64
    }
}

impl IntoIterator for Batch {
    type Item = StoreOp;
    type IntoIter = std::iter::Flatten<std::array::IntoIter<Option<StoreOp>, 2>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().flatten()
    }
}

/// The writes queued behind the writer at work, and how far the writes have come.
#[derive(Default)]
pub(crate) struct StoreQueue {
    /// Only while sends race: boxed, so that an idle session holds one pointer for it where a
    /// bare `VecDeque` would take four words in every session.
    #[allow(clippy::box_collection)]
    ops: Option<Box<VecDeque<StoreOp>>>,
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
            self.ops.get_or_insert_default().extend(batch);
            return None;
        }
        self.writing = true;
        Some(batch)
    }

    /// The writer made `made` more writes; the next queued one, or `None`: its turn ends, and
    /// the queue lets go of its buffer.
    pub(crate) fn next(&mut self, made: u64) -> Option<StoreOp> {
        self.written += made;
        let op = self.ops.as_mut().and_then(|ops| ops.pop_front());
        if op.is_none() {
            self.writing = false;
            self.ops = None;
        }
        op
    }

    /// A writer stopped midway after `made` writes: what it had not written goes first in
    /// line, for the next writer.
    pub(crate) fn hand_back(&mut self, made: u64, rest: impl DoubleEndedIterator<Item = StoreOp>) {
        self.written += made;
        let ops = self.ops.get_or_insert_default();
        for op in rest.rev() {
            ops.push_front(op);
        }
    }

    /// Gives up on everything not written: counted as written, so that no one waits for it.
    pub(crate) fn abandon(&mut self) {
        self.ops = None;
        self.written = self.queued;
        self.writing = false;
    }

    /// The watermark of everything handed over so far.
    pub(crate) fn queued(&self) -> u64 {
        self.queued
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
    use super::*;

    fn append(index: u64) -> StoreOp {
        StoreOp::Append {
            stream: 1,
            index,
            json: Bytes::new(),
        }
    }

    fn index(op: &StoreOp) -> u64 {
        match op {
            StoreOp::Append { index, .. } => *index,
            _ => u64::MAX,
        }
    }

    #[test]
    fn the_first_send_writes_its_own_and_later_ones_queue_in_order() {
        let mut q = StoreQueue::default();
        let mine = q.submit(Batch::two(append(1), Some(StoreOp::Finished { stream: 1 })));
        assert_eq!(mine.map(|b| b.into_iter().count()), Some(2));
        assert!(q.submit(Batch::one(append(2))).is_none());
        assert!(q.submit(Batch::one(append(3))).is_none());
        assert!(!q.has_written(4));
        assert_eq!(q.next(2).as_ref().map(index), Some(2));
        assert_eq!(q.next(1).as_ref().map(index), Some(3));
        assert!(q.next(1).is_none());
        assert!(q.has_written(4));
        assert!(q.ops.is_none(), "an idle queue holds no buffer");
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
        let order: Vec<u64> = std::iter::from_fn(|| q.next(0))
            .map(|op| index(&op))
            .collect();
        assert_eq!(order, [2, 3]);
        q.abandon();
        assert!(q.has_written(q.queued()));
    }
}
