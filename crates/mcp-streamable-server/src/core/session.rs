//! One session: its streams, the requests in flight, and the routing of outgoing messages.
//!
//! All routing state sits behind one short-held mutex, taken once to accept a POST's messages
//! ([`Session::begin`]) and once per outgoing message ([`Session::send`]), never across an
//! await. The event store is written in the order of the sends by the session's store writer
//! (`store_writer`), outside the lock.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use bytes::Bytes;
use mcp_jsonrpc::{Body, Id, Message};
use mcp_transport::{ErrorKind, Outgoing};
use tokio::sync::{Notify, mpsc};

use crate::core::context::Context;
use crate::core::error::Error;
use crate::core::event_store::EventStore;
use crate::core::reader::{OnEnd, Reader};
use crate::core::state::{Entry, STANDALONE, State, Stream};
use crate::core::store_writer::StoreOp;
use crate::protocol::{ProtocolVersion, initialize};

pub(crate) struct Session {
    /// Empty in stateless mode, where the session lives for one POST.
    pub(crate) id: Arc<str>,
    /// The id as the `Mcp-Session-Id` header of each SSE reply: made once, cloned after.
    pub(crate) id_header: Option<http::HeaderValue>,
    /// Who started the session, when an upstream layer said (`SessionOwner`): requests of
    /// anyone else do not find it.
    pub(crate) owner: Option<Arc<str>>,
    pub(crate) ctx: Arc<Context>,
    /// Where events are kept for resumption: the configured store, except in stateless mode,
    /// where no session outlives its POST and nothing can be resumed (S20).
    pub(crate) store: Option<Arc<dyn EventStore>>,
    state: Mutex<State>,
    /// Woken each time the store writer has written something.
    pub(crate) store_progress: Notify,
    /// Milliseconds since the context's epoch of the last activity.
    last_active: AtomicU64,
    /// When the session store last heard of activity, on the same clock.
    last_recorded: AtomicU64,
    /// How many times the state was locked: the crate's tests count critical sections.
    #[cfg(test)]
    pub(crate) locks: AtomicU64,
    pub(crate) span: tracing::Span,
    lifetime: Lifetime,
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

/// The channel of a session's messages to its application. Boxed: a channel allocates its
/// first block of 32 slots up front, and 32 messages take 2.3 KiB where 32 boxes take 256 bytes,
/// which idle sessions would otherwise each hold.
pub(crate) type Incoming = mpsc::Sender<Box<Message>>;

/// A session's channel to its application, holding at most `capacity` messages.
pub(crate) fn incoming_channel(capacity: usize) -> (Incoming, mpsc::Receiver<Box<Message>>) {
    mpsc::channel(capacity)
}

/// What a POST needs to go on, from [`Session::begin`].
pub(crate) struct Begun {
    incoming: Incoming,
    /// The session, when this POST must write the store (the stream's opening) before it
    /// answers.
    write_store: Option<Arc<Session>>,
    /// The reader of the stream registered for the body's requests; `None` for a body without
    /// requests.
    pub(crate) reader: Option<Reader>,
    /// Whether the stream opens with a priming event (S14).
    pub(crate) prime: bool,
}

impl Begun {
    /// Hands the body's messages to the application, waiting while its channel is full.
    pub(crate) async fn deliver(mut self, body: Body) -> Result<Option<Reader>, Error> {
        if let Some(session) = self.write_store.take() {
            session.write_store().await;
        }
        for message in body {
            self.incoming
                .send(Box::new(message))
                .await
                .map_err(|_| Error::SessionNotFound)?;
        }
        Ok(self.reader.take())
    }
}

impl Drop for Begun {
    /// A POST that leaves before delivering still hands its turn at the store on.
    fn drop(&mut self) {
        if let Some(session) = self.write_store.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move { session.write_store().await });
        }
    }
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
        ctx: Arc<Context>,
        incoming: Incoming,
        lifetime: Lifetime,
        owner: Option<Arc<str>>,
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
        let now = ctx.now_ms();
        let store = if stateless {
            None
        } else {
            ctx.config.event_store.clone()
        };
        let id_header = (!id.is_empty())
            .then(|| http::HeaderValue::from_str(&id).ok())
            .flatten();
        Arc::new(Session {
            id,
            id_header,
            owner,
            ctx,
            store,
            state: Mutex::new(State::new(version, incoming)),
            store_progress: Notify::new(),
            last_active: AtomicU64::new(now),
            last_recorded: AtomicU64::new(now),
            #[cfg(test)]
            locks: AtomicU64::new(0),
            span,
            lifetime,
        })
    }

    /// Lives for one POST (stateless mode, or a per-request one): kept apart from the
    /// sessions clients name by id.
    pub(crate) fn is_transient(&self) -> bool {
        self.lifetime != Lifetime::Session
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        #[cfg(test)]
        self.locks.fetch_add(1, Ordering::Relaxed);
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn has_store(&self) -> bool {
        self.store.is_some()
    }

    /// Whether a stream of this session opens with a priming event, given its version (S14).
    pub(crate) fn primes(&self, st: &State) -> bool {
        self.has_store() && st.version.primes()
    }

    /// Whether `owner` may use this session: the one that started it, or anyone if nobody
    /// said who started it.
    pub(crate) fn is_owned_by(&self, owner: Option<&str>) -> bool {
        self.owner.is_none() || self.owner.as_deref() == owner
    }

    pub(crate) fn touch(&self) {
        self.last_active.store(self.ctx.now_ms(), Ordering::Relaxed);
    }

    /// A request of the session was seen: noted here, and in the session store at most once
    /// per quarter of the idle timeout.
    pub(crate) async fn touch_record(&self) {
        let now = self.ctx.now_ms();
        self.last_active.store(now, Ordering::Relaxed);
        let Some(store) = &self.ctx.config.session_store else {
            return;
        };
        let quarter =
            u64::try_from(self.ctx.config.idle_timeout.as_millis() / 4).unwrap_or(u64::MAX);
        let last = self.last_recorded.load(Ordering::Relaxed);
        if now.saturating_sub(last) < quarter
            || self
                .last_recorded
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        if let Err(err) = store.touch(&self.id, std::time::SystemTime::now()).await {
            tracing::warn!(parent: &self.span, error = %err, "session store: touch failed");
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

    /// Accepts the messages of a POST, under one lock: checks that the session lives, that a
    /// batch is allowed in its version (S9, with `header_version` when the request names one,
    /// S8), that no request id is already in flight or twice in the body (S19), then registers
    /// a stream for the requests (S10) and decides whether it opens with a priming event (S14):
    /// for an `initialize`, by the version it asks for (`requested`).
    pub(crate) fn begin(
        self: &Arc<Self>,
        body: &Body,
        header_version: Option<ProtocolVersion>,
        requested: Option<ProtocolVersion>,
        on_end: OnEnd,
    ) -> Result<Begun, Error> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let incoming = match &st.incoming {
            Some(tx) if !st.closed => tx.clone(),
            _ => return Err(Error::SessionNotFound),
        };
        let version = header_version.unwrap_or(st.version);
        if body.is_batch() && !version.supports_batches() {
            return Err(Error::BatchNotAllowed(version));
        }
        let count = check_ids(body, st)?;
        if count == 0 {
            return Ok(Begun {
                incoming,
                write_store: None,
                reader: None,
                prime: false,
            });
        }
        let initialize = body
            .messages()
            .iter()
            .find(|m| m.is_initialize())
            .and_then(Message::request_id);
        let prime = match initialize {
            // This very request negotiates the version, so what its stream can carry depends on
            // what the client asked for: a client asking for 2025-11-25 reads priming events,
            // whatever the application then settles on.
            Some(_) => self.has_store() && requested.is_some_and(ProtocolVersion::primes),
            None => self.primes(st),
        };
        if let Some(id) = initialize {
            st.init_request = Some(id.clone());
        }
        let stream = st.next_stream;
        st.next_stream += 1;
        let generation = st.new_generation();
        // Index 0 is the priming event's (S14).
        let mut s = Stream::new(false, u64::from(prime));
        s.attach(generation);
        s.pending = count;
        st.streams.insert(stream, s);
        for id in body.messages().iter().filter_map(Message::request_id) {
            st.inflight.insert(id.clone(), stream);
        }
        // The store learns of the stream, so that its priming id resumes it on any node.
        let write_store =
            (prime && st.store_queue.push(StoreOp::Opened { stream })).then(|| Arc::clone(self));
        Ok(Begun {
            incoming,
            write_store,
            reader: Some(Reader::new(
                Arc::clone(self),
                stream,
                Some(generation),
                on_end,
            )),
            prime,
        })
    }

    /// Routes one outgoing message to its stream (S10), queues it for the event store if there
    /// is one, and hands it to the connection reading that stream.
    pub(crate) async fn send(self: &Arc<Self>, out: Outgoing) -> Result<(), mcp_transport::Error> {
        self.refuse_what_cannot_travel(&out)?;
        let json = Bytes::from(out.message.to_vec());
        let mut wakers = Vec::new();
        // Routing, indexing, queueing and ordering the store's write in one critical section,
        // with no await inside: a send whose future is dropped midway cannot leave a request
        // answered but its stream open, nor the store out of order.
        let (write_store, negotiated) = {
            let mut guard = self.lock();
            let st = &mut *guard;
            if st.closed {
                return Err(mcp_transport::Error::closed());
            }
            let (stream, completes, negotiated) = self.route(st, &out)?;
            // The standalone stream keeps index 0 free when it primes, as request streams do,
            // so that a GET can always name the point just before what waits for it.
            let first = u64::from(self.primes(st));
            let s = st
                .streams
                .entry(stream)
                .or_insert_with(|| Stream::new(true, first));
            let index = s.next_index;
            s.next_index += 1;
            let is_response = matches!(out.message, Message::Response(_));
            let mut write_store = false;
            if self.has_store() {
                let append = StoreOp::Append {
                    stream,
                    index,
                    json: json.clone(),
                };
                write_store = st.store_queue.push(append);
                if completes {
                    write_store |= st.store_queue.push(StoreOp::Finished { stream });
                }
            }
            let entry = Entry {
                index,
                json,
                is_response,
            };
            st.queue(self, stream, entry, completes, &mut wakers);
            (write_store, negotiated)
        };
        for waker in wakers {
            waker.wake();
        }
        if let Some(version) = negotiated {
            tracing::debug!(parent: &self.span, %version, "protocol version negotiated");
            if let Some(store) = &self.ctx.config.session_store
                && let Err(err) = store.set_version(&self.id, version).await
            {
                tracing::warn!(parent: &self.span, error = %err, "session store: version not recorded");
            }
        }
        if write_store {
            self.write_store().await;
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

    /// Ends the standalone stream's connection (shutdown, S23).
    pub(crate) fn end_standalone(&self) {
        let waker = self.lock().disconnect(STANDALONE);
        wake(waker.flatten());
    }
}

/// S19: the number of requests in `body`, once none of their ids is in flight or twice in the
/// body. Linear: a batch of any size is checked with one set.
fn check_ids(body: &Body, st: &State) -> Result<usize, Error> {
    let mut ids = body.messages().iter().filter_map(Message::request_id);
    let mut seen: Option<HashSet<&Id>> = None;
    let mut count = 0;
    for id in ids.by_ref() {
        if st.inflight.contains_key(id) {
            return Err(Error::DuplicateRequestId(id.clone()));
        }
        if body.is_batch() && !seen.get_or_insert_with(HashSet::new).insert(id) {
            return Err(Error::DuplicateRequestId(id.clone()));
        }
        count += 1;
    }
    Ok(count)
}

pub(crate) fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}
