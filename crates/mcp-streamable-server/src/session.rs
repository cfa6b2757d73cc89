//! One session: its streams, the requests in flight, and the routing of outgoing messages.
//!
//! All routing state sits behind one short-held mutex, taken once to accept a POST's messages
//! ([`Session::begin`]) and once per outgoing message ([`Session::send`]). A second, async lock
//! orders the send path (index, outbox, event store) against resumption and the session's end,
//! so that a stream replayed from the store and then followed live neither skips nor repeats a
//! message, and nothing is stored for a session the store was told is over.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use bytes::Bytes;
use mcp_jsonrpc::{Body, Id, Message};
use mcp_transport::{Error, ErrorKind, Outgoing};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::error::Reject;
use crate::event_store::EventStore;
use crate::headers::{DEFAULT_NEGOTIATED_VERSION, SUPPORTED_VERSIONS};
use crate::service::Shared;
use crate::stream::{Entry, STANDALONE, Stream};

/// The first protocol version with priming events (S14).
const PRIMING_VERSION: &str = "2025-11-25";

pub(crate) struct Session {
    /// Empty in stateless mode, where the session lives for one POST.
    pub(crate) id: Arc<str>,
    /// The id as the `Mcp-Session-Id` header of each SSE reply: made once, cloned after.
    pub(crate) id_header: Option<http::HeaderValue>,
    pub(crate) shared: Arc<Shared>,
    /// Where events are kept for resumption: the configured store, except in stateless mode,
    /// where no session outlives its POST and nothing can be resumed (S20).
    pub(crate) store: Option<Arc<dyn EventStore>>,
    state: Mutex<State>,
    send_order: tokio::sync::Mutex<()>,
    /// Milliseconds since `shared.epoch` of the last activity.
    last_active: AtomicU64,
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
    Request(&'static str),
}

/// The channel of a session's messages to its application. Boxed: a channel allocates its
/// first block of 32 slots up front, and 32 messages take 2.3 KiB where 32 boxes take 256 bytes,
/// which idle sessions would otherwise each hold.
pub(crate) type Incoming = mpsc::Sender<Box<Message>>;

/// A session's channel to its application, holding at most `capacity` messages.
pub(crate) fn incoming_channel(capacity: usize) -> (Incoming, mpsc::Receiver<Box<Message>>) {
    mpsc::channel(capacity)
}

pub(crate) struct State {
    pub(crate) closed: bool,
    /// The negotiated protocol version, once the initialize result told it.
    pub(crate) version: &'static str,
    init_request: Option<Id>,
    incoming: Option<Incoming>,
    next_stream: u64,
    pub(crate) streams: HashMap<u64, Stream>,
    /// Requests in flight: which stream their response goes on.
    pub(crate) inflight: HashMap<Id, u64>,
    /// Bytes waiting in outboxes, across streams.
    pub(crate) buffered: usize,
    next_generation: u64,
    /// Connections (SSE bodies, JSON waiters) attached to streams.
    pub(crate) attached: usize,
}

impl State {
    pub(crate) fn new_generation(&mut self) -> u64 {
        self.next_generation += 1;
        self.next_generation
    }
}

/// What a POST needs to go on, from [`Session::begin`].
pub(crate) struct Begun {
    /// The channel to the application.
    pub(crate) incoming: Incoming,
    /// The stream registered for the body's requests, and its reader's generation; `None` for
    /// a body without requests.
    pub(crate) stream: Option<(u64, u64)>,
    /// Whether the stream opens with a priming event (S14).
    pub(crate) prime: bool,
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
    ) -> Arc<Session> {
        let stateless = lifetime != Lifetime::Session;
        let version = match lifetime {
            Lifetime::Request(version) => version,
            _ => DEFAULT_NEGOTIATED_VERSION,
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
        let id_header = (!id.is_empty())
            .then(|| http::HeaderValue::from_str(&id).ok())
            .flatten();
        Arc::new(Session {
            id,
            id_header,
            shared,
            store,
            state: Mutex::new(State {
                closed: false,
                version,
                init_request: None,
                incoming: Some(incoming),
                next_stream: STANDALONE + 1,
                streams: HashMap::new(),
                inflight: HashMap::new(),
                buffered: 0,
                next_generation: 0,
                attached: 0,
            }),
            send_order: tokio::sync::Mutex::new(()),
            last_active: AtomicU64::new(now),
            #[cfg(test)]
            locks: AtomicU64::new(0),
            span,
            lifetime,
        })
    }

    /// Lives for one POST (stateless mode, or a per-request one): kept apart from the
    /// registry's sessions, which clients name by id.
    pub(crate) fn is_transient(&self) -> bool {
        self.lifetime != Lifetime::Session
    }

    /// Serves one request of the 2026-07-28 family (M6).
    fn is_per_request(&self) -> bool {
        matches!(self.lifetime, Lifetime::Request(_))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        #[cfg(test)]
        self.locks.fetch_add(1, Ordering::Relaxed);
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) async fn send_order(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.send_order.lock().await
    }

    pub(crate) fn has_store(&self) -> bool {
        self.store.is_some()
    }

    /// Whether a stream of this session opens with a priming event, given its version (S14).
    fn primes(&self, st: &State) -> bool {
        self.has_store() && st.version >= PRIMING_VERSION
    }

    pub(crate) fn touch(&self) {
        self.last_active
            .store(self.shared.now_ms(), Ordering::Relaxed);
    }

    pub(crate) fn last_active_ms(&self) -> u64 {
        self.last_active.load(Ordering::Relaxed)
    }

    /// Whether the session has no open stream and no request in flight.
    pub(crate) fn is_idle(&self) -> bool {
        let st = self.lock();
        st.attached == 0 && st.inflight.is_empty()
    }

    /// Bytes waiting in this session's outboxes (S22).
    pub(crate) fn buffered(&self) -> usize {
        self.lock().buffered
    }

    pub(crate) fn version(&self) -> &'static str {
        self.lock().version
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Accepts the messages of a POST, under one lock: checks that the session lives, that a
    /// batch is allowed in its version (S9, with `header_version` when the request names one,
    /// S8), that no request id is already in flight (S19), then registers a stream for the
    /// requests (S10) and decides whether it opens with a priming event (S14).
    pub(crate) fn begin(
        &self,
        body: &Body,
        header_version: Option<&'static str>,
    ) -> Result<Begun, Reject> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let incoming = match &st.incoming {
            Some(tx) if !st.closed => tx.clone(),
            _ => return Err(Reject::session_not_found()),
        };
        let version = header_version.unwrap_or(st.version);
        if body.is_batch() && version != "2025-03-26" {
            return Err(Reject::bad_request(format!(
                "batches are not allowed in protocol version {version}; send one message per request"
            )));
        }
        let requests = || body.messages().iter().filter_map(Message::request_id);
        let count = requests().count();
        if count == 0 {
            return Ok(Begun {
                incoming,
                stream: None,
                prime: false,
            });
        }
        for (i, id) in requests().enumerate() {
            if st.inflight.contains_key(id) || requests().take(i).any(|other| other == id) {
                return Err(Reject::bad_request(format!(
                    "request id {id} is already in flight in this session; ids must be unique among requests in flight"
                )));
            }
        }
        let initialize = body.messages().iter().find(|m| m.is_initialize());
        let prime = match initialize {
            // This very request negotiates the version, so what its stream can carry depends on
            // what the client asked for: a client asking for 2025-11-25 reads priming events,
            // whatever the application then settles on.
            Some(Message::Request(init)) => {
                self.has_store() && requested_version(init).is_some_and(|v| v >= PRIMING_VERSION)
            }
            _ => self.primes(st),
        };
        let stream = st.next_stream;
        st.next_stream += 1;
        let generation = st.new_generation();
        // Index 0 is the priming event's (S14).
        let mut s = Stream::new(false, u64::from(prime));
        s.attach(generation);
        s.pending = count;
        st.streams.insert(stream, s);
        st.attached += 1;
        for id in requests() {
            st.inflight.insert(id.clone(), stream);
        }
        if let Some(init) = body
            .messages()
            .iter()
            .find(|m| m.is_initialize())
            .and_then(Message::request_id)
        {
            st.init_request = Some(init.clone());
        }
        Ok(Begun {
            incoming,
            stream: Some((stream, generation)),
            prime,
        })
    }

    /// Routes one outgoing message to its stream (S10), keeps it in the event store if there is
    /// one, and hands it to the connection reading that stream.
    pub(crate) async fn send(&self, out: Outgoing) -> Result<(), Error> {
        if self.is_per_request() && matches!(out.message, Message::Request(_)) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "a 2026-07-28 client takes no requests from the server: return an \
                 InputRequiredResult carrying them instead (MRTR)",
            ));
        }
        if self.is_transient() && matches!(out.message, Message::Request(_)) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "a stateless server cannot send requests to the client: \
                 the client's answer would come in a POST that no session can match",
            ));
        }
        let is_response = matches!(out.message, Message::Response(_));
        let json = Bytes::from(out.message.to_vec());
        let _order = self.send_order().await;
        let mut wakers = Vec::new();
        // Routing, indexing and queueing in one critical section, with no await inside: a send
        // whose future is dropped midway cannot leave a request answered but its stream open.
        let (stream, index, completes) = {
            let mut guard = self.lock();
            let st = &mut *guard;
            if st.closed {
                return Err(Error::closed());
            }
            let related = out.related_request();
            let stream = related
                .and_then(|id| st.inflight.get(id).copied())
                .unwrap_or(STANDALONE);
            let mut completes = false;
            if let Message::Response(r) = &out.message
                && let Some(id) = r.id()
            {
                if st.inflight.remove(id).is_some()
                    && let Some(s) = st.streams.get_mut(&stream)
                {
                    s.pending -= 1;
                    completes = s.pending == 0;
                }
                if st.init_request.as_ref() == Some(id) {
                    st.init_request = None;
                    if let Some(version) = negotiated_version(&out.message) {
                        st.version = version;
                    }
                }
            }
            if stream == STANDALONE {
                if self.is_per_request() {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        "a 2026-07-28 connection serves one request: what it sends must relate \
                         to that request, and nothing can follow the response",
                    ));
                }
                if self.is_transient() {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        "a stateless server has no stream for messages unrelated to a request",
                    ));
                }
                if related.is_some() {
                    // S10: the stream of that request is finished (or it never existed); the
                    // message goes on the standalone stream rather than nowhere.
                    tracing::debug!(parent: &self.span, "message for a finished request goes to the standalone stream");
                }
            }
            // The standalone stream keeps index 0 free when it primes, as request streams do,
            // so that a GET can always name the point just before what waits for it.
            let first = u64::from(self.primes(st));
            let s = st
                .streams
                .entry(stream)
                .or_insert_with(|| Stream::new(true, first));
            let index = s.next_index;
            s.next_index += 1;
            let entry = Entry {
                index,
                json: json.clone(),
                is_response,
            };
            crate::stream::push(st, self, stream, entry, completes, &mut wakers);
            (stream, index, completes)
        };
        for waker in wakers {
            waker.wake();
        }
        // Dropped from here on, the message has gone out but may be missing from the store.
        if let Some(store) = &self.store {
            if let Err(err) = store.append(&self.id, stream, index, json).await {
                tracing::error!(parent: &self.span, error = %err, "event store append failed");
            }
            if completes {
                store.stream_finished(&self.id, stream).await;
            }
        }
        Ok(())
    }

    /// Ends the session: the application's `recv` ends, later sends fail, and the streams end,
    /// at once or once they have written what is queued (`ending`). Returns whether this call
    /// ended it.
    pub(crate) fn close_now(&self, ending: Ending) -> bool {
        let wakers: Vec<Waker> = {
            let mut guard = self.lock();
            let State {
                closed,
                incoming,
                inflight,
                streams,
                buffered,
                attached,
                ..
            } = &mut *guard;
            if *closed {
                return false;
            }
            *closed = true;
            *incoming = None;
            inflight.clear();
            let mut wakers = Vec::new();
            streams.retain(|_, s| {
                if ending == Ending::Flush && s.flush() {
                    return true;
                }
                *buffered -= s.outbox_bytes();
                if let Some(waker) = s.detach_reader() {
                    *attached -= 1;
                    wakers.extend(waker);
                }
                false
            });
            wakers
        };
        for waker in wakers {
            waker.wake();
        }
        tracing::debug!(parent: &self.span, "session closed");
        true
    }

    /// Ends the session and forgets it everywhere: the registry and the event store.
    pub(crate) async fn close(self: &Arc<Self>, ending: Ending) {
        if self.close_now(ending) {
            self.forget().await;
        }
    }

    pub(crate) async fn forget(&self) {
        self.shared.registry.remove(self);
        if let Some(store) = &self.store {
            // A send that found the session open may still be storing its message: wait for it,
            // so that nothing is stored after the store has let go of the session.
            let _order = self.send_order().await;
            store.session_closed(&self.id).await;
        }
    }

    /// Ends the session from a context that cannot wait (a drop): the store is told on a task.
    pub(crate) fn close_detached(self: &Arc<Self>, ending: Ending) {
        if !self.close_now(ending) {
            return;
        }
        self.shared.registry.remove(self);
        if self.has_store()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let session = Arc::clone(self);
            handle.spawn(async move { session.forget().await });
        }
    }
}

/// The protocol version an initialize request asks for, if this server speaks it.
fn requested_version(init: &mcp_jsonrpc::Request) -> Option<&'static str> {
    #[derive(Deserialize)]
    struct InitializeParams<'a> {
        #[serde(rename = "protocolVersion", borrow)]
        protocol_version: &'a str,
    }
    let params: InitializeParams<'_> = init.parse_params().ok()?;
    SUPPORTED_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == params.protocol_version)
}

/// The protocol version of an initialize result, if it is one this server speaks.
fn negotiated_version(message: &Message) -> Option<&'static str> {
    #[derive(Deserialize)]
    struct InitializeResult<'a> {
        #[serde(rename = "protocolVersion", borrow)]
        protocol_version: &'a str,
    }
    let Message::Response(r) = message else {
        return None;
    };
    let result: InitializeResult<'_> = serde_json::from_str(r.result().ok()?.get()).ok()?;
    SUPPORTED_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == result.protocol_version)
}

impl Session {
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
            match crate::stream::disconnect(st, stream) {
                Some(waker) => waker,
                None => return false,
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }
}

impl Session {
    /// M6: the client closed the stream of a per-request session. The application reads a
    /// `notifications/cancelled` for each request still unanswered, then the end of the
    /// connection; whatever it sends from now on fails.
    pub(crate) fn cancel_detached(self: &Arc<Self>) {
        let cancelled = {
            let st = self.lock();
            if let Some(incoming) = st.incoming.as_ref().filter(|_| !st.closed) {
                for id in st.inflight.keys() {
                    let params = serde_json::json!({
                        "requestId": id,
                        "reason": "the client closed the request's stream",
                    });
                    let cancelled = mcp_jsonrpc::Notification::new(
                        "notifications/cancelled",
                        mcp_jsonrpc::to_raw_value(&params).ok(),
                    );
                    // The channel holds the request at most: there is room.
                    if incoming.try_send(Box::new(cancelled.into())).is_err() {
                        tracing::debug!(parent: &self.span, %id, "could not tell the application of the cancellation: it stopped reading");
                    }
                }
            }
            !st.closed && !st.inflight.is_empty()
        };
        if cancelled {
            tracing::debug!(parent: &self.span, "request cancelled: the client closed its stream");
        }
        self.close_detached(Ending::Abort);
    }

    pub(crate) fn has_inflight(&self) -> bool {
        !self.lock().inflight.is_empty()
    }

    /// Ends the standalone stream's connection (shutdown, S23).
    pub(crate) fn end_standalone(&self) {
        let waker = {
            let mut guard = self.lock();
            crate::stream::disconnect(&mut guard, crate::stream::STANDALONE)
        };
        if let Some(Some(waker)) = waker {
            waker.wake();
        }
    }
}
