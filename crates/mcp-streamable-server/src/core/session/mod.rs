//! One session: its streams, the requests in flight, and the routing of outgoing messages.
//!
//! All routing state sits behind one short-held mutex, taken once to accept a POST's messages
//! ([`Session::begin`]) and once per outgoing message ([`Session::send`]), never across an
//! await. The event store is written in the order of the sends by the session's store writer
//! (`store_writer`), outside the lock.

pub(crate) mod attach;
pub(crate) mod begin;
pub(crate) mod connection;
pub(crate) mod lifecycle;
pub(crate) mod queue;
pub(crate) mod reader;
pub(crate) mod state;
pub(crate) mod store_writer;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use bytes::Bytes;
use mcp_jsonrpc::{Id, Message};
use mcp_transport::{ErrorKind, Outgoing};
use tokio::sync::Notify;

use crate::core::cluster::Fence;
use crate::core::cluster::lease::Lease;
use crate::core::session::state::{Batch, Entry, Incoming, STANDALONE, State, Stream, Wakers};
use crate::core::shared::Shared;
use crate::core::store::event_store::{EventStore, Write};
use crate::protocol::{ProtocolVersion, initialize};

pub(crate) struct Session {
    /// Empty in stateless mode, where the session lives for one POST.
    pub(crate) id: Arc<str>,
    /// The id as the `Mcp-Session-Id` header of each SSE reply: made once, cloned after.
    pub(crate) id_header: Option<http::HeaderValue>,
    /// Who started the session, when an upstream layer said (`SessionOwner`): requests of
    /// anyone else do not find it.
    pub(crate) owner: Option<Arc<str>>,
    /// The client it counts against for the per-client cap (S18): its owner, else its
    /// connection's IP address, when known.
    pub(crate) client: Option<Arc<str>>,
    pub(crate) shared: Arc<Shared>,
    /// Where events are kept for resumption: the configured store, except in stateless mode,
    /// where no session outlives its POST and nothing can be resumed (S20).
    pub(crate) store: Option<Arc<dyn EventStore>>,
    state: Mutex<State>,
    /// Woken each time the store writer has written something.
    pub(crate) store_progress: Notify,
    /// Milliseconds since the context's epoch of the last activity.
    last_active: AtomicU64,
    /// How many times the state was locked: the crate's tests count critical sections.
    #[cfg(test)]
    pub(crate) locks: AtomicU64,
    pub(crate) span: tracing::Span,
    lifetime: Lifetime,
    /// The spans of its requests in flight.
    #[cfg(feature = "otel")]
    pub(crate) operations: crate::core::telemetry::operation::Operations,
    /// Its life, for the session-based family.
    #[cfg(feature = "otel")]
    pub(crate) life: Option<crate::core::telemetry::SessionLife>,
}

/// How long a session lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifetime {
    /// Until DELETE, idle timeout, eviction, shutdown or the application's close: the
    /// session-based family.
    Session,
    /// One POST: stateless mode (S20).
    Post,
    /// One request of the per-request (2026-07-28) family, in this protocol version (M6).
    Request(ProtocolVersion),
}

/// How the streams of a closing session end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// At once: the client asked (DELETE), or nobody reads (idle, evicted).
    Abort,
    /// After writing what is already queued to readers still connected: the application
    /// closed, or the server shuts down. A message sent before the close is not lost to it.
    Flush,
}

impl Session {
    pub(crate) fn new(
        id: Arc<str>,
        shared: Arc<Shared>,
        incoming: Incoming,
        lifetime: Lifetime,
        owner: Option<Arc<str>>,
        client: Option<Arc<str>>,
        fence: Option<Fence>,
    ) -> Arc<Session> {
        let stateless = lifetime != Lifetime::Session;
        let version = match lifetime {
            Lifetime::Request(version) => version,
            _ => ProtocolVersion::DEFAULT_NEGOTIATED,
        };
        let span = if stateless {
            tracing::debug_span!("mcp.session", session_id = tracing::field::Empty)
        } else {
            tracing::debug_span!("mcp.session", session_id = %id)
        };
        let now = shared.now_ms();
        let store = if stateless {
            None
        } else {
            shared.config.event_store.clone()
        };
        let budget = Arc::clone(&shared.budget);
        let id_header = (!id.is_empty())
            .then(|| http::HeaderValue::from_str(&id).ok())
            .flatten();
        #[cfg(feature = "otel")]
        let (operations, life) = {
            use crate::core::telemetry::{SessionLife, operation::Operations};
            let telemetry = &shared.telemetry;
            let named = (lifetime == Lifetime::Session && !id.is_empty()).then(|| Arc::clone(&id));
            let life = named.as_ref().and_then(|_| SessionLife::begin(telemetry));
            (Operations::new(telemetry, named), life)
        };
        Arc::new(Session {
            id,
            id_header,
            owner,
            client,
            shared,
            store,
            state: Mutex::new(State::new(version, incoming, budget, fence)),
            store_progress: Notify::new(),
            last_active: AtomicU64::new(now),
            #[cfg(test)]
            locks: AtomicU64::new(0),
            span,
            lifetime,
            #[cfg(feature = "otel")]
            operations,
            #[cfg(feature = "otel")]
            life,
        })
    }

    /// Lives for one POST (stateless mode, or a per-request one): kept apart from the
    /// sessions clients name by id.
    pub(crate) fn is_transient(&self) -> bool {
        self.lifetime != Lifetime::Session
    }

    /// Says why the session is about to end, for its telemetry (the first cause said counts).
    #[cfg(feature = "otel")]
    pub(crate) fn ends_by(&self, cause: crate::core::telemetry::EndCause) {
        if let Some(life) = &self.life {
            life.ends_by(cause);
        }
    }

    /// How long the session lives: what ends it when a reader of its streams ends.
    pub(crate) fn lifetime(&self) -> Lifetime {
        self.lifetime
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        #[cfg(test)]
        self.locks.fetch_add(1, Ordering::Relaxed);
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn has_store(&self) -> bool {
        self.store.is_some()
    }

    /// With a cluster, the session's holding.
    pub(crate) fn fence(&self) -> Option<Fence> {
        self.lock().fence
    }

    /// With a cluster, the session's holding is now `fence`: it started here, or was claimed
    /// again after this node's lease lapsed.
    pub(crate) fn set_fence(&self, fence: Fence) {
        self.lock().fence = Some(fence);
    }

    /// This node's lease, with a cluster.
    pub(crate) fn lease(&self) -> Option<&Lease> {
        self.shared.config.cluster.as_deref().map(|c| c.lease())
    }

    /// [`is_held`](Self::is_held), now.
    pub(crate) fn is_held_now(&self) -> bool {
        self.is_held(&self.lock())
    }

    /// Whether this node may deliver to the session's application and let its readers take
    /// what it sent: always without a cluster; with one, while the node's lease holds the
    /// session's fence (N8).
    pub(crate) fn is_held(&self, st: &State) -> bool {
        match (st.fence, self.lease()) {
            (Some(fence), Some(lease)) => lease.holds(fence),
            _ => true,
        }
    }

    /// Whether a stream of this session opens with a priming event, given its version (S14).
    pub(crate) fn primes(&self, st: &State) -> bool {
        self.has_store() && st.version.primes()
    }

    /// The index of a new stream's first message: 1 when index 0 is kept for a priming event
    /// (S14), or with a cluster, where a forward sent again names the last event the asking
    /// node has (`mcp-forward-after`), index 0 before any (N3).
    pub(crate) fn first_index(&self, st: &State) -> u64 {
        u64::from(self.primes(st) || (self.has_store() && self.shared.config.cluster.is_some()))
    }

    /// Whether `owner` may use this session: the one that started it, or anyone if nobody
    /// said who started it.
    pub(crate) fn is_owned_by(&self, owner: Option<&str>) -> bool {
        self.owner.is_none() || self.owner.as_deref() == owner
    }

    pub(crate) fn touch(&self) {
        self.last_active
            .store(self.shared.now_ms(), Ordering::Relaxed);
    }

    /// A request of the session was seen: noted here, and in the session store at most once
    /// per quarter of the idle timeout: when the quarter it falls in is not the last
    /// activity's.
    pub(crate) async fn touch_record(&self) {
        let now = self.shared.now_ms();
        let before = self.last_active.swap(now, Ordering::Relaxed);
        let Some(store) = &self.shared.config.session_store else {
            return;
        };
        let quarter = u64::try_from(self.shared.config.idle_timeout.as_millis() / 4)
            .unwrap_or(u64::MAX)
            .max(1);
        if now / quarter == before / quarter {
            return;
        }
        let fence = self.fence();
        match store
            .touch(&self.id, fence, std::time::SystemTime::now())
            .await
        {
            Ok(()) => {}
            Err(err) if self.refused(&err, fence) => {}
            Err(err) => {
                tracing::warn!(parent: &self.span, session_id = %self.id, error = %err, "session store: touch failed")
            }
        }
    }

    pub(crate) fn last_active_ms(&self) -> u64 {
        self.last_active.load(Ordering::Relaxed)
    }

    /// Whether the session has no open stream and no request in flight.
    pub(crate) fn is_idle(&self) -> bool {
        let st = self.lock();
        st.inflight.is_empty() && st.attached() == 0
    }

    /// Bytes waiting in this session's outboxes (S22).
    pub(crate) fn buffered(&self) -> usize {
        self.lock().buffered.get()
    }

    pub(crate) fn version(&self) -> ProtocolVersion {
        self.lock().version
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub(crate) fn has_inflight(&self) -> bool {
        !self.lock().inflight.is_empty()
    }

    /// Routes one outgoing message to its stream (S10), queues it for the event store if there
    /// is one, and hands it to the connection reading that stream.
    pub(crate) async fn send(self: &Arc<Self>, out: Outgoing) -> Result<(), mcp_transport::Error> {
        self.refuse_what_cannot_travel(&out)?;
        let json = Bytes::from(out.message.to_vec());
        let mut wakers = Wakers::default();
        #[cfg(feature = "otel")]
        let mut answered = None;
        // Routing, indexing, queueing and ordering the store's write in one critical section,
        // with no await inside: a send whose future is dropped midway cannot leave a request
        // answered but its stream open, nor the store out of order.
        let (write_store, negotiated, behind) = {
            let mut guard = self.lock();
            let st = &mut *guard;
            if st.closed {
                return Err(mcp_transport::Error::closed());
            }
            let (stream, completes, negotiated) = self.route(st, &out)?;
            #[cfg(feature = "otel")]
            if let Message::Response(r) = &out.message {
                answered = self.operations.take(r);
            }
            // The standalone stream keeps index 0 free when it primes, as request streams do,
            // so that a GET can always name the point just before what waits for it.
            let first = self.first_index(st);
            let s = st
                .streams
                .entry(stream)
                .or_insert_with(|| Stream::new(true, first));
            let index = s.next_index;
            s.next_index += 1;
            let is_response = matches!(out.message, Message::Response(_));
            let write_store = self.has_store().then(|| {
                let append = Write::Append {
                    stream,
                    index,
                    message: json.clone(),
                };
                let finished = completes.then_some(Write::Finish { stream });
                st.store_queue.submit(Batch::two(append, finished))
            });
            // A store more than the session's buffer behind slows the application down.
            let behind = (st.store_queue.behind() > self.shared.config.max_buffered_bytes)
                .then(|| st.store_queue.queued());
            let entry = Entry {
                index,
                json,
                is_response,
            };
            st.queue(self, stream, entry, completes, &mut wakers);
            (write_store, negotiated, behind)
        };
        // Ended before the reader is woken: a client that read the response finds the span
        // ended.
        #[cfg(feature = "otel")]
        if let (Some(operation), Message::Response(r)) = (answered, &out.message) {
            self.operations.answer(operation, r);
        }
        wakers.wake();
        if let Some(Some(batch)) = write_store {
            self.write_behind(batch);
        }
        if let Some(version) = negotiated {
            tracing::debug!(parent: &self.span, %version, "protocol version negotiated");
            let fence = self.fence();
            if let Some(store) = &self.shared.config.session_store
                && let Err(err) = store.set_version(&self.id, fence, version).await
                && !self.refused(&err, fence)
            {
                tracing::warn!(parent: &self.span, session_id = %self.id, error = %err, "session store: version not recorded");
            }
        }
        if let Some(watermark) = behind {
            self.store_caught_up(watermark).await;
        }
        Ok(())
    }

    /// Requests to the client and messages unrelated to a request have no way to the client of
    /// a session that lives for one POST or one request.
    fn refuse_what_cannot_travel(&self, out: &Outgoing) -> Result<(), mcp_transport::Error> {
        if !matches!(out.message, Message::Request(_)) {
            return Ok(());
        }
        let why = match self.lifetime {
            Lifetime::Session => return Ok(()),
            Lifetime::Request(_) => {
                "a 2026-07-28 client takes no requests from the server: return an \
                 InputRequiredResult carrying them instead (MRTR)"
            }
            Lifetime::Post => {
                "a stateless server cannot send requests to the client: \
                 the client's answer would come in a POST that no session can match"
            }
        };
        Err(mcp_transport::Error::new(ErrorKind::Unsupported, why))
    }

    /// Which stream `out` goes on (S10), whether it completes that stream, and the version an
    /// initialize result settles; a response takes its request out of flight.
    fn route(
        &self,
        st: &mut State,
        out: &Outgoing,
    ) -> Result<(u64, bool, Option<ProtocolVersion>), mcp_transport::Error> {
        let related = out.related_request();
        let stream = related
            .and_then(|id| st.inflight.get(id).copied())
            .unwrap_or(STANDALONE);
        if stream == STANDALONE {
            self.check_standalone(related.is_some())?;
        }
        let mut completes = false;
        let mut negotiated = None;
        if let Message::Response(r) = &out.message
            && let Some(id) = r.id()
        {
            if st.inflight.remove(id).is_some()
                && let Some(s) = st.streams.get_mut(&stream)
            {
                debug_assert!(s.pending > 0, "a stream answered more often than asked");
                s.pending = s.pending.saturating_sub(1);
                completes = s.pending == 0;
            }
            if st.init_request.as_ref() == Some(id) {
                st.init_request = None;
                negotiated = initialize::negotiated_version(&out.message);
                if let Some(version) = negotiated {
                    st.version = version;
                    st.negotiated = true;
                }
            }
        }
        Ok((stream, completes, negotiated))
    }

    /// Whether a message may go on the standalone stream.
    fn check_standalone(&self, related: bool) -> Result<(), mcp_transport::Error> {
        let why = match self.lifetime {
            Lifetime::Request(_) => {
                "a 2026-07-28 connection serves one request: what it sends must relate \
                 to that request, and nothing can follow the response"
            }
            Lifetime::Post => {
                "a stateless server has no stream for messages unrelated to a request"
            }
            Lifetime::Session => {
                if related {
                    // S10: the stream of that request is finished (or it never existed); the
                    // message goes on the standalone stream rather than nowhere.
                    tracing::debug!(parent: &self.span, "message for a finished request goes to the standalone stream");
                }
                return Ok(());
            }
        };
        Err(mcp_transport::Error::new(ErrorKind::Unsupported, why))
    }

    /// Ends the connection reading the stream of `request`, keeping the request (S14).
    pub(crate) fn close_stream(&self, request: &Id) -> bool {
        if !self.has_store() {
            return false;
        }
        let waker = {
            let mut guard = self.lock();
            let st = &mut *guard;
            let Some(stream) = st.inflight.get(request).copied() else {
                return false;
            };
            match st.disconnect(stream) {
                Some(waker) => waker,
                None => return false,
            }
        };
        wake(waker);
        true
    }

    /// Wakes every reader of the session, to look again: the node's lease holds again (N8).
    pub(crate) fn wake_readers(&self) {
        let wakers: Vec<Waker> = {
            let mut st = self.lock();
            st.streams
                .values_mut()
                .filter_map(Stream::take_waker)
                .collect()
        };
        for waker in wakers {
            waker.wake();
        }
    }

    /// Ends the connection of every stream of the session, keeping the session and its
    /// requests: this node cannot prove it holds it, and its clients resume wherever it is held
    /// (N8).
    pub(crate) fn end_readers(&self) {
        let wakers: Vec<Option<Waker>> = {
            let mut st = self.lock();
            let streams: Vec<u64> = st.streams.keys().copied().collect();
            streams
                .into_iter()
                .filter_map(|stream| st.disconnect(stream))
                .collect()
        };
        for waker in wakers {
            wake(waker);
        }
    }

    /// Ends the standalone stream's connection (shutdown, S23).
    pub(crate) fn end_standalone(&self) {
        let waker = self.lock().disconnect(STANDALONE);
        wake(waker.flatten());
    }
}

pub(crate) fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}
