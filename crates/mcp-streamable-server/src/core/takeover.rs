//! Taking over a session whose holder died: a session of this node from the stored record,
//! its application started again from the stored `initialize`, the requests its last holder
//! left unanswered answered with errors (N4). Where a session is, and whether to take it over,
//! is the cluster's to find (`crate::cluster::route`).

use std::collections::HashSet;
use std::sync::Arc;

use mcp_jsonrpc::{Body, ErrorObject, Id, Message, code};

use crate::core::cluster::Fence;
use crate::core::error::Error;
use crate::core::owner::SessionOwner;
use crate::core::session::begin::Begin;
use crate::core::session::connection::ServerConnection;
use crate::core::session::state::{Batch, Posted, STANDALONE, Stream, incoming_channel};
use crate::core::session::{Ending, Lifetime, Session};
use crate::core::shared::{Caps, Shared};
use crate::core::store::event_store::{EventStore, StoreError, Unfinished, Write};
use crate::core::store::session_store::SessionRecord;
use crate::protocol;

/// A session taken over, waiting for its application: [`finish`](Restored::finish) starts it.
pub(crate) struct Restored {
    session: Arc<Session>,
    connection: ServerConnection,
    fence: Fence,
    record: SessionRecord,
    owner: Option<SessionOwner>,
}

impl Restored {
    /// Starts the application with `start` (handed the connection, the holder count and the
    /// session's span, it returns the parts the factory was given), hands it the stored
    /// `initialize` and `notifications/initialized`, makes the session findable, and answers
    /// the requests the last holder left unanswered. The session, if `owner` may use it.
    pub(crate) async fn finish(
        self,
        start: impl FnOnce(ServerConnection, u64, tracing::Span) -> Arc<http::request::Parts>,
    ) -> Result<Arc<Session>, Error> {
        let Restored {
            session,
            connection,
            fence,
            record,
            owner,
        } = self;
        let generation = fence.generation;
        let request = start(connection, generation, session.span.clone());
        let request = &request;
        let shared = Arc::clone(&session.shared);
        let replayed = replay_initialize(&session, &record, generation, request).await;
        let inserted = replayed.and_then(|()| {
            let caps = Caps {
                total: shared.config.max_sessions,
                per_client: shared.config.max_sessions_per_client,
            };
            shared.sessions.insert(Arc::clone(&session), caps)
        });
        shared.restored.notify_waiters();
        let evicted = match inserted {
            Ok(evicted) => evicted,
            Err(err) => {
                session.close(Ending::Abort).await;
                return Err(err);
            }
        };
        if let Some(evicted) = evicted {
            #[cfg(feature = "otel")]
            evicted.ends_by(crate::core::telemetry::EndCause::Evicted);
            evicted.close(Ending::Abort).await;
        }
        shared.sessions.start_reaper(&shared);
        #[cfg(feature = "otel")]
        shared.telemetry.taken_over();
        tracing::info!(parent: &session.span, session_id = %session.id, generation, "session taken over from a holder that died");
        if !session.is_owned_by(owner.as_ref().map(SessionOwner::as_str)) {
            return Err(Error::SessionNotFound);
        }
        Ok(session)
    }
}

/// The first stream number, and the first standalone index, of holder `generation`: each
/// holder numbers in its own range, so that no two holders give out one event id.
fn base(generation: u64) -> u64 {
    generation << 32
}

/// The message of the error answering a request whose holder died before answering it.
const HOLDER_DIED: &str = "the server node serving this request stopped before answering it; \
                           it may or may not have been carried out";

impl Shared {
    /// Takes session `id` over, as the holder of `fence` (generation at least 1): a session
    /// with the stored record, numbering its streams in its own range, not findable until
    /// [`Restored::finish`].
    pub(crate) async fn restore(
        self: &Arc<Self>,
        id: &str,
        owner: Option<&SessionOwner>,
        fence: Fence,
    ) -> Result<Restored, Error> {
        let Some(record) = self.load_record(id).await? else {
            if let Some(cluster) = &self.config.cluster {
                cluster.end(id, fence).await;
            }
            return Err(Error::SessionNotFound);
        };
        let generation = fence.generation;
        let (tx, rx) = incoming_channel(self.config.incoming_capacity);
        let session = Session::new(
            Arc::from(id),
            Arc::clone(self),
            tx,
            Lifetime::Session,
            record.owner.as_deref().map(Arc::from),
            None,
            Some(fence),
        );
        let opening = prepare(&session, &record, generation);
        let connection = ServerConnection::new(rx, Arc::clone(&session));
        if let Some(batch) = opening {
            Arc::clone(&session).write_store(batch).await;
        }
        // Before anything else can write (nothing finds the session yet, its application has
        // not started), so that the session's writes stay one at a time.
        if let Some(store) = &session.store {
            answer_unfinished(&**store, &session.id, fence).await;
        }
        Ok(Restored {
            session,
            connection,
            fence,
            record,
            owner: owner.cloned(),
        })
    }

    async fn load_record(&self, id: &str) -> Result<Option<SessionRecord>, Error> {
        let Some(store) = &self.config.session_store else {
            return Ok(None);
        };
        store.load(id).await.map_err(Error::shared_store)
    }
}

/// Sets a taken-over session's state: its version, its numbering, and its standalone stream,
/// which goes on after what the last holder sent on it. Returns the store's opening of it.
fn prepare(session: &Session, record: &SessionRecord, generation: u64) -> Option<Batch> {
    let mut st = session.lock();
    if let Some(version) = record.protocol_version {
        st.version = version;
        st.negotiated = true;
    }
    st.next_stream = base(generation) + 1;
    st.streams
        .insert(STANDALONE, Stream::new(true, base(generation) + 1));
    st.store_queue
        .submit(Batch::one(Write::Open { stream: STANDALONE }))
}

/// Hands the application the stored `initialize`, under an id no client uses, and
/// `notifications/initialized`: the first messages of its channel, before the session is
/// findable. The answer goes on a stream nobody reads.
async fn replay_initialize(
    session: &Arc<Session>,
    record: &SessionRecord,
    generation: u64,
    request: &Arc<http::request::Parts>,
) -> Result<(), Error> {
    let Ok(Body::Single(Message::Request(mut init))) = mcp_jsonrpc::parse(&record.initialize)
    else {
        tracing::error!(parent: &session.span, session_id = %session.id, "the stored initialize is not a request: session not restored");
        return Err(Error::SessionNotFound);
    };
    init.id = Id::from(format!("mcp-restart-{generation}"));
    let initialized = mcp_jsonrpc::Notification::new("notifications/initialized", None);
    let shared = &session.shared;
    for body in [
        Body::Single(Message::Request(init)),
        Body::Single(initialized.into()),
    ] {
        let Begin::Accepted(accepted) =
            session.begin(&body, None, record.protocol_version, None)?
        else {
            return Err(Error::SessionNotFound);
        };
        let charge = shared.inbound.charge(0).ok_or(Error::InboundFull(0))?;
        // The reader, if any, is dropped: the answer is stored, and read by nobody.
        accepted
            .deliver(Posted::new(Arc::clone(request), body, charge))
            .await?;
    }
    Ok(())
}

/// Answers, with errors, the requests the last holder began and did not answer, on their own
/// streams, and finishes those streams: no client waits forever for a dead node.
async fn answer_unfinished(store: &dyn EventStore, id: &str, fence: Fence) {
    let unfinished = match store.unfinished(id).await {
        Ok(unfinished) => unfinished,
        Err(err) => {
            tracing::error!(session_id = id, error = %err, "event store: unfinished streams unknown; their requests stay unanswered");
            return;
        }
    };
    for stream in unfinished {
        if stream.stream >= base(fence.generation) {
            continue;
        }
        if let Err(err) = answer_stream(store, id, &stream, fence).await {
            tracing::error!(session_id = id, stream = stream.stream, error = %err, "event store: could not answer a dead holder's requests");
        }
    }
}

async fn answer_stream(
    store: &dyn EventStore,
    id: &str,
    unfinished: &Unfinished,
    fence: Fence,
) -> Result<(), StoreError> {
    let stream = unfinished.stream;
    let answered = answered(store, id, stream).await;
    // Past any index the dead holder gave out: it may have sent a client events it had not
    // stored yet, whose ids must not name these errors too.
    let mut index = base(fence.generation);
    let error = ErrorObject::new(code::INTERNAL_ERROR, HOLDER_DIED);
    let mut writes = Vec::new();
    for request in &unfinished.requests {
        if answered.contains(request) {
            continue;
        }
        index += 1;
        let message = protocol::error_response(request.clone(), error.clone());
        writes.push(Write::Append {
            stream,
            index,
            message,
        });
    }
    writes.push(Write::Finish { stream });
    store.write(id, Some(fence), &writes).await
}

/// The requests of `stream` answered already, as far as the store knows.
async fn answered(store: &dyn EventStore, id: &str, stream: u64) -> HashSet<Id> {
    let events = store.replay_after(id, stream, 0).await.unwrap_or_default();
    events
        .iter()
        .filter_map(|e| protocol::answered_request(&e.message))
        .collect()
}
