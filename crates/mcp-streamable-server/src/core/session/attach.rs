//! Readers that come by GET: the standalone stream (S10, S12) and resumption (S11).

use std::sync::Arc;

use crate::core::error::Error;
use crate::core::session::reader::Reader;
use crate::core::session::state::{Batch, STANDALONE, Stream};
use crate::core::session::{Session, wake};
use crate::core::store::event_store::Write;
use crate::core::store::event_store::{EventStore, ReplayError, StoredEvent};
use crate::protocol::EventId;

/// A new reader of the standalone stream.
pub(crate) struct Standalone {
    pub(crate) reader: Reader,
    /// `Some` when the stream opens with a priming event (S14): the id it names, if there is
    /// one before the first message waiting.
    pub(crate) priming: Option<Option<EventId>>,
}

/// A resumed stream: the events to replay, then its reader.
pub(crate) struct Resumed {
    pub(crate) events: Vec<StoredEvent>,
    /// Follows the stream live if it is still open; ends after the replay if it is over.
    pub(crate) reader: Reader,
}

impl Session {
    /// A new reader of the standalone stream; one already reading is replaced, and what it
    /// had not written goes to the new one (S12).
    pub(crate) async fn attach_standalone(self: &Arc<Self>) -> Result<Standalone, Error> {
        let (generation, old_waker, priming, write_store) = {
            let mut guard = self.lock();
            let st = &mut *guard;
            if st.closed {
                return Err(Error::SessionNotFound);
            }
            let generation = st.new_generation();
            let primes = self.primes(st);
            let first = self.first_index(st);
            let opened = !st.streams.contains_key(&STANDALONE);
            let stream = st
                .streams
                .entry(STANDALONE)
                .or_insert_with(|| Stream::new(true, first));
            let old_waker = stream.attach(generation);
            if old_waker.is_some() {
                tracing::debug!(parent: &self.span, "a new GET replaces the open standalone stream");
            }
            // S14: the priming event names the point just before what is queued, so that a
            // client cut before reading it resumes with all of it; with nothing queued, the
            // last message given out (index 0, kept free, when there was none).
            let before = match stream.first_queued() {
                Some(first) => first.checked_sub(1),
                None => stream.next_index.checked_sub(1),
            };
            let priming = primes.then(|| before.map(|index| EventId::new(STANDALONE, index)));
            // The store learns of the stream, so that its priming id resumes it on any node.
            let opening = Batch::one(Write::Open { stream: STANDALONE });
            let write_store = (primes && opened)
                .then(|| st.store_queue.submit(opening))
                .flatten();
            (generation, old_waker, priming, write_store)
        };
        wake(old_waker);
        let reader = Reader::new(Arc::clone(self), STANDALONE, Some(generation));
        if let Some(batch) = write_store {
            Arc::clone(self).write_store(batch).await;
        }
        Ok(Standalone { reader, priming })
    }

    /// S11: the stream of `after` from the event after it: what the store kept, then live if
    /// the stream is still open here. Whether the id was given out is the store's to say, not
    /// this node's: an id with nothing after it resumes live from there.
    pub(crate) async fn resume(self: &Arc<Self>, after: EventId) -> Result<Resumed, Error> {
        let Some(store) = self.store.clone() else {
            return Err(Error::NoEventStore);
        };
        // Judge the id first, against a store that has everything sent so far: a refused id
        // leaves the stream, and whoever reads it, alone.
        let (watermark, live) = {
            let st = self.lock();
            if st.closed {
                return Err(Error::SessionNotFound);
            }
            (
                st.store_queue.queued(),
                st.streams.contains_key(&after.stream),
            )
        };
        self.store_caught_up(watermark).await;
        let mut events = self.replay(&*store, after, after.index, live).await?;
        // Then take the stream over: what is sent from now on queues for this reader, and what
        // was stored since the judgement is replayed too.
        let (generation, old_waker, watermark) = {
            let mut guard = self.lock();
            let st = &mut *guard;
            if st.closed {
                return Err(Error::SessionNotFound);
            }
            let watermark = st.store_queue.queued();
            let generation = st.new_generation();
            match st.streams.get_mut(&after.stream) {
                Some(s) => (Some(generation), s.attach(generation), watermark),
                // The stream is over: replay, then end.
                None => (None, None, watermark),
            }
        };
        wake(old_waker);
        let mut reader = Reader::new(Arc::clone(self), after.stream, generation);
        self.store_caught_up(watermark).await;
        let seen = events.last().map_or(after.index, |e| e.index);
        events.extend(self.replay(&*store, after, seen, true).await?);
        // What was queued for this reader and replayed already is not written twice.
        reader.skip_through(events.last().map_or(after.index, |e| e.index));
        tracing::debug!(
            parent: &self.span,
            stream = after.stream,
            after = after.index,
            replayed = events.len(),
            live = generation.is_some(),
            "stream resumed"
        );
        Ok(Resumed { events, reader })
    }

    /// The events of `id`'s stream after `index`, from the store. A store that is not told of
    /// opened streams knows nothing of one that has stored nothing yet: index 0 of a stream
    /// `open` here is then taken for its priming id, with nothing after it.
    async fn replay(
        &self,
        store: &dyn EventStore,
        id: EventId,
        index: u64,
        open: bool,
    ) -> Result<Vec<StoredEvent>, Error> {
        match store.replay_after(&self.id, id.stream, index).await {
            Ok(events) => Ok(events),
            Err(ReplayError::UnknownStream) if index == 0 && open => Ok(Vec::new()),
            Err(ReplayError::UnknownStream | ReplayError::UnknownEvent) => {
                Err(Error::UnknownEvent(id))
            }
            Err(ReplayError::Purged) => Err(Error::Purged(id)),
            Err(ReplayError::Failed(err)) => {
                tracing::error!(parent: &self.span, session_id = %self.id, error = %err, "event store replay failed");
                Err(Error::StoreFailed)
            }
        }
    }
}
