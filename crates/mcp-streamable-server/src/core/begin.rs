//! A POST's messages accepted by a session: checked, given a stream, and delivered (S9, S10,
//! S14, S19).

use std::collections::HashSet;
use std::sync::Arc;

use mcp_jsonrpc::{Body, Id, Message};
use mcp_transport::Received;

use crate::core::error::Error;
use crate::core::reader::{OnEnd, Reader};
use crate::core::session::Session;
use crate::core::state::{Batch, Delivery, Incoming, Posted, State, StoreOp, Stream};
use crate::protocol::ProtocolVersion;

/// What a POST needs to go on, from [`Session::begin`].
pub(crate) struct Begun {
    incoming: Incoming,
    /// The session and the writes, when this POST must write the store (the stream's opening)
    /// before it answers.
    write_store: Option<(Arc<Session>, Batch)>,
    /// The reader of the stream registered for the body's requests; `None` for a body without
    /// requests.
    pub(crate) reader: Option<Reader>,
    /// Whether the stream opens with a priming event (S14).
    pub(crate) prime: bool,
}

impl Begun {
    /// Hands the body's messages to the application, each with the parts of the HTTP request
    /// that carried them, waiting while its channel is full. The POST's `charge` of the
    /// incoming budget is shared out among them, each share given back as the application
    /// takes its message.
    pub(crate) async fn deliver(mut self, posted: Posted) -> Result<Option<Reader>, Error> {
        if let Some((session, batch)) = self.write_store.take() {
            session.write_store(batch).await;
        }
        let Posted {
            request,
            body,
            mut charge,
        } = posted;
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

impl Drop for Begun {
    /// A POST that leaves before delivering still hands its turn at the store on.
    fn drop(&mut self) {
        if let Some((session, batch)) = self.write_store.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn(async move { session.write_store(batch).await });
                }
                Err(_) => session.lock().store_queue.abandon(),
            }
        }
    }
}

impl Session {
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
        // Index 0 is the priming event's (S14), and with a cluster kept free anyway.
        let first = u64::from(prime) | self.first_index(st);
        let mut s = Stream::new(false, first);
        s.attach(generation);
        s.pending = count;
        s.id_given = prime;
        st.streams.insert(stream, s);
        for id in body.messages().iter().filter_map(Message::request_id) {
            st.inflight.insert(id.clone(), stream);
        }
        // The store learns of the stream, so that its priming id resumes it on any node; with a
        // cluster, of its requests too, for a node that takes the session over to answer.
        let opening = if self.ctx.config.cluster.is_some() && self.has_store() {
            let requests = body
                .messages()
                .iter()
                .filter_map(Message::request_id)
                .cloned()
                .collect();
            Some(StoreOp::Began { stream, requests })
        } else {
            prime.then_some(StoreOp::Opened { stream })
        };
        let write_store = opening
            .and_then(|op| st.store_queue.submit(Batch::one(op)))
            .map(|batch| (Arc::clone(self), batch));
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
