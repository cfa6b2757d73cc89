//! One session: its streams, the requests in flight, and the routing of outgoing messages.
//!
//! All routing state sits behind one short-held mutex. A second, async lock orders the send
//! path (index, event store, outbox) against resumption, so that a stream replayed from the
//! store and then followed live neither skips nor repeats a message.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use bytes::Bytes;
use mcp_jsonrpc::{Id, Message};
use mcp_transport::{Error, ErrorKind, Outgoing};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::headers::{DEFAULT_NEGOTIATED_VERSION, SUPPORTED_VERSIONS};
use crate::service::Shared;
use crate::stream::{Entry, STANDALONE, Stream};

pub(crate) struct Session {
    /// Empty in stateless mode, where the session lives for one POST.
    pub(crate) id: Arc<str>,
    pub(crate) shared: Arc<Shared>,
    state: Mutex<State>,
    send_order: tokio::sync::Mutex<()>,
    /// Milliseconds since `shared.epoch` of the last activity.
    last_active: AtomicU64,
    pub(crate) span: tracing::Span,
    pub(crate) stateless: bool,
}

pub(crate) struct State {
    pub(crate) closed: bool,
    /// The negotiated protocol version, once the initialize result told it.
    pub(crate) version: &'static str,
    init_request: Option<Id>,
    incoming: Option<mpsc::Sender<Message>>,
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

/// What the POST path registered for its requests.
pub(crate) struct Registered {
    pub(crate) stream: u64,
    pub(crate) generation: u64,
}

impl Session {
    pub(crate) fn new(
        id: Arc<str>,
        shared: Arc<Shared>,
        incoming: mpsc::Sender<Message>,
        stateless: bool,
    ) -> Arc<Session> {
        let span = if stateless {
            tracing::debug_span!("mcp.session", session_id = tracing::field::Empty)
        } else {
            tracing::debug_span!("mcp.session", session_id = %id)
        };
        let now = shared.now_ms();
        Arc::new(Session {
            id,
            shared,
            state: Mutex::new(State {
                closed: false,
                version: DEFAULT_NEGOTIATED_VERSION,
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
            span,
            stateless,
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) async fn send_order(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.send_order.lock().await
    }

    pub(crate) fn has_store(&self) -> bool {
        self.shared.config.event_store.is_some()
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

    pub(crate) fn version(&self) -> &'static str {
        self.lock().version
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The channel to the application, while the session lives.
    pub(crate) fn incoming(&self) -> Option<mpsc::Sender<Message>> {
        self.lock().incoming.clone()
    }

    /// Registers the requests of a POST on a new stream (S10, S19). Fails on an id already in
    /// flight, or when the session has ended.
    pub(crate) fn register(
        &self,
        requests: &[&Id],
        initialize: Option<&Id>,
    ) -> Result<Registered, RegisterError> {
        let mut st = self.lock();
        if st.closed {
            return Err(RegisterError::Closed);
        }
        for (i, id) in requests.iter().enumerate() {
            if st.inflight.contains_key(*id) || requests[..i].contains(id) {
                return Err(RegisterError::Duplicate((*id).clone()));
            }
        }
        let stream = st.next_stream;
        st.next_stream += 1;
        let generation = st.new_generation();
        let mut s = Stream::new(false);
        s.attach(generation);
        s.pending = requests.len();
        if self.has_store() && st.version >= "2025-11-25" {
            // Index 0 is the priming event's (S14).
            s.next_index = 1;
        }
        st.streams.insert(stream, s);
        st.attached += 1;
        for id in requests {
            st.inflight.insert((*id).clone(), stream);
        }
        if let Some(id) = initialize {
            st.init_request = Some(id.clone());
        }
        Ok(Registered { stream, generation })
    }

    /// Routes one outgoing message to its stream (S10), keeps it in the event store if there is
    /// one, and hands it to the connection reading that stream.
    pub(crate) async fn send(&self, out: Outgoing) -> Result<(), Error> {
        if self.stateless && matches!(out.message, Message::Request(_)) {
            return Err(Error::new(
                ErrorKind::Protocol,
                "a stateless server cannot send requests to the client: \
                 the client's answer would come in a POST that no session can match",
            ));
        }
        let is_response = matches!(out.message, Message::Response(_));
        let json = Bytes::from(out.message.to_vec());
        let _order = self.send_order().await;
        let (stream, index, completes) = {
            let mut st = self.lock();
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
                if self.stateless {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        "a stateless server has no stream for messages unrelated to a request",
                    ));
                }
                if related.is_some() {
                    // S10: the stream of that request is finished (or it never existed); the
                    // message goes on the standalone stream rather than nowhere.
                    tracing::debug!(parent: &self.span, "message for a finished request goes to the standalone stream");
                }
            }
            let s = st
                .streams
                .entry(stream)
                .or_insert_with(|| Stream::new(true));
            let index = s.next_index;
            s.next_index += 1;
            (stream, index, completes)
        };
        if let Some(store) = &self.shared.config.event_store {
            if let Err(err) = store.append(&self.id, stream, index, json.clone()).await {
                tracing::error!(parent: &self.span, error = %err, "event store append failed");
            }
            if completes {
                store.stream_finished(&self.id, stream).await;
            }
        }
        let mut st = self.lock();
        let entry = Entry {
            index,
            json,
            is_response,
        };
        crate::stream::push(
            &mut st,
            &self.shared.config,
            &self.span,
            stream,
            entry,
            completes,
        );
        Ok(())
    }

    /// Ends the session: its streams close, the application's `recv` ends, and later sends
    /// fail (S16). Returns whether this call ended it.
    pub(crate) fn close_now(&self) -> bool {
        let wakers: Vec<Waker> = {
            let mut st = self.lock();
            if st.closed {
                return false;
            }
            st.closed = true;
            st.incoming = None;
            st.inflight.clear();
            st.buffered = 0;
            st.streams
                .drain()
                .filter_map(|(_, mut s)| s.take_waker())
                .collect()
        };
        for waker in wakers {
            waker.wake();
        }
        tracing::debug!(parent: &self.span, "session closed");
        true
    }

    /// Ends the session and forgets it everywhere: the registry and the event store.
    pub(crate) async fn close(self: &Arc<Self>) {
        if self.close_now() {
            self.forget().await;
        }
    }

    pub(crate) async fn forget(&self) {
        self.shared.registry.remove(&self.id);
        if let Some(store) = &self.shared.config.event_store {
            store.session_closed(&self.id).await;
        }
    }

    /// Ends the session from a context that cannot wait (a drop): the store is told on a task.
    pub(crate) fn close_detached(self: &Arc<Self>) {
        if !self.close_now() {
            return;
        }
        self.shared.registry.remove(&self.id);
        if self.shared.config.event_store.is_some()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let session = Arc::clone(self);
            handle.spawn(async move { session.forget().await });
        }
    }
}

pub(crate) enum RegisterError {
    Closed,
    Duplicate(Id),
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
