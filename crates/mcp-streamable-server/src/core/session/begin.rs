//! A POST's messages accepted by a session: checked, given a stream, proven held with a
//! cluster, and delivered (S9, S10, S14, S19, N8).

use std::collections::HashSet;
use std::sync::Arc;

use mcp_jsonrpc::{Body, Id, Message};
use mcp_transport::Received;

use crate::core::cluster::Fence;
use crate::core::error::Error;
use crate::core::session::Session;
use crate::core::session::reader::Reader;
use crate::core::session::state::{Batch, Delivery, Incoming, Posted, State, Stream};
use crate::core::store::event_store::{Begun, Write};
use crate::protocol::ProtocolVersion;

/// What [`Session::begin`] made of a POST.
pub(crate) enum Begin {
    /// The messages are accepted, to be delivered.
    Accepted(Accepted),
    /// The POST is a forward sent again whose first sending began `stream` here: nothing is
    /// delivered twice; the asking node is given that stream.
    Again(u64),
}

/// What a POST needs to go on, from [`Session::begin`].
pub(crate) struct Accepted {
    session: Arc<Session>,
    incoming: Incoming,
    /// What must be written before the messages are delivered.
    opening: Opening,
    /// The stream registered for the body's requests until their delivery starts: forgotten
    /// again if the POST goes before.
    registered: Option<u64>,
    /// The reader of the stream registered for the body's requests; `None` for a body without
    /// requests.
    pub(crate) reader: Option<Reader>,
    /// Whether the stream opens with a priming event (S14).
    pub(crate) prime: bool,
    /// The version the session speaks, for the requests' spans.
    #[cfg(feature = "otel")]
    version: ProtocolVersion,
}

/// What a POST writes before its messages are delivered.
enum Opening {
    Nothing,
    /// Without a cluster: the stream's opening, made by this POST as the store's writer, so that
    /// its priming id resumes on any node.
    Write(Batch),
    /// With a cluster: the proof that this node holds the session (N8), which for a stream of
    /// requests records them (their ids) in the store, and for messages without requests
    /// touches the session, both fenced.
    Prove {
        fence: Fence,
        requests: Vec<Id>,
    },
}

impl Accepted {
    /// Writes what must come before delivery: without a cluster, the stream's opening; with
    /// one, the proof that this node holds the session (N8): its lease holds the session's
    /// fence, and the store, fenced, accepts the stream (recording its requests, and the
    /// forward they came with) or, without requests, a touch. [`Begun::Again`] when the forward
    /// began a stream before; then nothing is to be delivered. [`Error::NotHolder`] when
    /// another node holds the session (this node's copy then ended), [`Error::Fenced`] when this
    /// node cannot prove its lease now: the messages are not delivered, and may go elsewhere.
    /// Once is enough: a second call does nothing.
    pub(crate) async fn prove(&mut self, forward: Option<&str>) -> Result<Begun, Error> {
        match std::mem::replace(&mut self.opening, Opening::Nothing) {
            Opening::Nothing => Ok(Begun::New),
            Opening::Write(batch) => {
                Arc::clone(&self.session).write_store(batch).await;
                Ok(Begun::New)
            }
            Opening::Prove { fence, requests } => {
                let proven = self.proof(fence, &requests, forward).await;
                if proven.is_err() {
                    // Tried again, it proves again.
                    self.opening = Opening::Prove { fence, requests };
                }
                proven
            }
        }
    }

    async fn proof(
        &self,
        fence: Fence,
        requests: &[Id],
        forward: Option<&str>,
    ) -> Result<Begun, Error> {
        let session = &self.session;
        if !session.is_held(&session.lock()) {
            return Err(Error::Fenced);
        }
        let proven = match (self.registered, &session.store) {
            (Some(stream), Some(store)) => {
                store
                    .begin(&session.id, fence, stream, requests, forward)
                    .await
            }
            _ => match &session.shared.config.session_store {
                Some(records) => records
                    .touch(&session.id, Some(fence), std::time::SystemTime::now())
                    .await
                    .map(|()| Begun::New),
                None => Ok(Begun::New),
            },
        };
        match proven {
            Ok(begun) => Ok(begun),
            Err(err) if session.refused(&err, Some(fence)) => Err(Error::NotHolder),
            Err(err) => Err(Error::shared_store(err)),
        }
    }

    /// Hands the body's messages to the application, each with the parts of the HTTP request
    /// that carried it, waiting while its channel is full; proves first (see
    /// [`prove`](Self::prove)) if that was not done. The POST's `charge` of the incoming budget
    /// is shared out among the messages, each share given back as the application takes its
    /// message. The reader of their stream, if they had requests.
    pub(crate) async fn deliver(mut self, posted: Posted) -> Result<Option<Reader>, Error> {
        if let Begun::Again { .. } = self.prove(None).await? {
            // Only a forward begins again, and it proved with its id first.
            return Err(Error::SessionNotFound);
        }
        self.registered = None;
        let Posted {
            request,
            body,
            mut charge,
        } = posted;
        #[cfg(feature = "otel")]
        self.session
            .operations
            .begin(&body, &request, self.version.as_str());
        let mut left = body.messages().len();
        for message in body {
            // An even share of what is left: the last message takes all of it.
            let share = charge.split_off(charge.bytes() / left);
            left -= 1;
            let delivery = Delivery {
                received: Received::new(message).with_request(Arc::clone(&request)),
                charge: Some(share),
            };
            self.incoming
                .send(Box::new(delivery))
                .await
                .map_err(|_| Error::SessionNotFound)?;
        }
        Ok(self.reader.take())
    }
}

impl Drop for Accepted {
    /// A POST that leaves before delivering still hands its turn at the store on, and lets go
    /// of the stream it registered: nothing will answer its requests.
    fn drop(&mut self) {
        if let Opening::Write(batch) = std::mem::replace(&mut self.opening, Opening::Nothing) {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn(Arc::clone(&self.session).write_store(batch));
                }
                Err(_) => self.session.lock().store_queue.abandon(),
            }
        }
        if let Some(stream) = self.registered.take() {
            self.reader = None;
            self.session.lock().abandon(stream);
        }
    }
}

impl Session {
    /// Accepts the messages of a POST, under one lock: checks that the session lives, that a
    /// batch is allowed in its version (S9, with `header_version` when the request names one,
    /// S8), that no request id is already in flight or twice in the body (S19), then registers
    /// a stream for the requests (S10) and decides whether it opens with a priming event (S14):
    /// for an `initialize`, by the version it asks for (`requested`). A POST forwarded by
    /// another node carries the forward's id (`forward`): one that began a stream here already
    /// is [`Begin::Again`].
    pub(crate) fn begin(
        self: &Arc<Self>,
        body: &Body,
        header_version: Option<ProtocolVersion>,
        requested: Option<ProtocolVersion>,
        forward: Option<&str>,
    ) -> Result<Begin, Error> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let incoming = match &st.incoming {
            Some(tx) if !st.closed => tx.clone(),
            _ => return Err(Error::SessionNotFound),
        };
        if let Some(stream) = forward.and_then(|f| st.stream_of_forward(f)) {
            return Ok(Begin::Again(stream));
        }
        // S8: a request speaks the version its session negotiated.
        if let Some(header) = header_version
            && st.negotiated
            && header != st.version
        {
            return Err(Error::VersionMismatch {
                header,
                negotiated: st.version,
            });
        }
        let version = header_version.unwrap_or(st.version);
        if body.is_batch() && !version.supports_batches() {
            return Err(Error::BatchNotAllowed(version));
        }
        let count = check_ids(body, st)?;
        // A fence is the session's with a cluster only.
        let fence = st.fence;
        if count == 0 {
            let opening = fence.map_or(Opening::Nothing, |fence| Opening::Prove {
                fence,
                requests: Vec::new(),
            });
            return Ok(Begin::Accepted(Accepted {
                session: Arc::clone(self),
                incoming,
                opening,
                registered: None,
                reader: None,
                prime: false,
                #[cfg(feature = "otel")]
                version,
            }));
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
        // Index 0 is the priming event's (S14), and with a cluster kept free anyway.
        let first = u64::from(prime) | self.first_index(st);
        let mut s = Stream::new(false, first);
        s.attach(generation);
        s.pending = count;
        s.id_given = prime;
        s.forward = forward.map(Box::from);
        st.streams.insert(stream, s);
        let requests = || body.messages().iter().filter_map(Message::request_id);
        for id in requests() {
            st.inflight.insert(id.clone(), stream);
        }
        // The store learns of the stream, so that its priming id resumes it on any node; with a
        // cluster, of its requests too (the proof), for a node that takes the session over to
        // answer.
        let opening = match fence {
            Some(fence) => Opening::Prove {
                fence,
                requests: requests().cloned().collect(),
            },
            None => prime
                .then(|| st.store_queue.submit(Batch::one(Write::Open { stream })))
                .flatten()
                .map_or(Opening::Nothing, Opening::Write),
        };
        Ok(Begin::Accepted(Accepted {
            session: Arc::clone(self),
            incoming,
            opening,
            registered: Some(stream),
            reader: Some(Reader::new(Arc::clone(self), stream, Some(generation))),
            prime,
            #[cfg(feature = "otel")]
            version,
        }))
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
