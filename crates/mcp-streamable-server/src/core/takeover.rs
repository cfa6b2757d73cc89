//! Sessions held by several nodes: finding where a session named by a request is held, and
//! taking over one whose holder died (its application started again from the stored
//! `initialize`, the requests it left unanswered answered with errors).

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use mcp_jsonrpc::{Body, ErrorObject, Id, Message, Response, code};

use crate::core::cluster::Location;
use crate::core::connection::ServerConnection;
use crate::core::context::{Caps, Context};
use crate::core::error::Error;
use crate::core::event_store::{EventStore, StoreError, Unfinished};
use crate::core::owner::SessionOwner;
use crate::core::reader::OnEnd;
use crate::core::session::{Ending, Lifetime, Session};
use crate::core::session_store::SessionRecord;
use crate::core::state::{Batch, Posted, STANDALONE, StoreOp, Stream, incoming_channel};

/// Where the session a request names is served.
pub(crate) enum Located {
    /// Here, as it was.
    Here(Arc<Session>),
    /// By node `node`, to which the request is forwarded.
    Elsewhere(String),
    /// Here, taken over from a holder that died: its application must be started with
    /// `connection` before the request is served.
    Restored(Restored),
}

/// A session taken over, waiting for its application: [`finish`](Restored::finish) starts it.
pub(crate) struct Restored {
    session: Arc<Session>,
    connection: ServerConnection,
    generation: u64,
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
            generation,
            record,
            owner,
        } = self;
        let request = start(connection, generation, session.span.clone());
        let request = &request;
        let ctx = Arc::clone(&session.ctx);
        let replayed = replay_initialize(&session, &record, generation, request).await;
        let inserted = replayed.and_then(|()| {
            let caps = Caps {
                total: ctx.config.max_sessions,
                per_client: ctx.config.max_sessions_per_client,
            };
            ctx.sessions.insert(Arc::clone(&session), caps)
        });
        ctx.restored.notify_waiters();
        let evicted = match inserted {
            Ok(evicted) => evicted,
            Err(err) => {
                session.close(Ending::Abort).await;
                return Err(err);
            }
        };
        if let Some(evicted) = evicted {
            evicted.close(Ending::Abort).await;
        }
        ctx.sessions.start_reaper(&ctx);
        tracing::info!(parent: &session.span, generation, "session taken over from a holder that died");
        if let Some(store) = &session.store {
            answer_unfinished(&ctx, &**store, &session.id, generation).await;
        }
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

/// How long, and how many times, a request waits for the restoring of a session that this node
/// took over for another request.
const RESTORE_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
const RESTORE_WAITS: usize = 50;

/// The message of the error answering a request whose holder died before answering it.
const HOLDER_DIED: &str = "the server node serving this request stopped before answering it; \
                           it may or may not have been carried out";

impl Context {
    /// Where session `id` is served, for a request made by `owner` (S7). A session this node
    /// does not hold is looked up in the cluster, if there is one: held elsewhere, or taken
    /// over here if its holder's lease lapsed.
    pub(crate) async fn locate_session(
        self: &Arc<Self>,
        id: &str,
        owner: Option<&SessionOwner>,
    ) -> Result<Located, Error> {
        if self.sessions.get(id).is_some() || self.config.cluster.is_none() {
            return self.find_session(id, owner).await.map(Located::Here);
        }
        let Some(cluster) = &self.config.cluster else {
            return Err(Error::SessionNotFound);
        };
        let location = cluster.locate(id).await.map_err(Error::shared_store)?;
        match location {
            Location::Elsewhere { node } => Ok(Located::Elsewhere(node)),
            Location::TakenOver { generation } => {
                let restored = self.restore(id, owner, generation).await?;
                Ok(Located::Restored(restored))
            }
            Location::Here => {
                // Held here by the books, not in memory: another request is restoring it (wait
                // for it, a bounded while), or it ended here and the release was lost.
                for _ in 0..RESTORE_WAITS {
                    let restored = self.restored.notified();
                    if self.sessions.get(id).is_some() {
                        break;
                    }
                    let _ = tokio::time::timeout(RESTORE_WAIT, restored).await;
                }
                self.find_session(id, owner).await.map(Located::Here)
            }
            _ => Err(Error::SessionNotFound),
        }
    }

    /// Takes session `id` over as its `generation`th holder: a session with the stored record,
    /// numbering its streams in its own range, not findable until [`Restored::finish`].
    async fn restore(
        self: &Arc<Self>,
        id: &str,
        owner: Option<&SessionOwner>,
        generation: u64,
    ) -> Result<Restored, Error> {
        let Some(record) = self.load_record(id).await? else {
            if let Some(cluster) = &self.config.cluster {
                cluster.release(id).await;
            }
            return Err(Error::SessionNotFound);
        };
        let (tx, rx) = incoming_channel(self.config.incoming_capacity);
        let session = Session::new(
            Arc::from(id),
            Arc::clone(self),
            tx,
            Lifetime::Session,
            record.owner.as_deref().map(Arc::from),
            None,
        );
        let opening = prepare(&session, &record, generation);
        let connection = ServerConnection::new(rx, Arc::clone(&session));
        if let Some(batch) = opening {
            session.write_store(batch).await;
        }
        Ok(Restored {
            session,
            connection,
            generation,
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
        .submit(Batch::one(StoreOp::Opened { stream: STANDALONE }))
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
        tracing::error!(parent: &session.span, "the stored initialize is not a request: session not restored");
        return Err(Error::SessionNotFound);
    };
    init.id = Id::from(format!("mcp-restart-{generation}"));
    let initialized = mcp_jsonrpc::Notification::new("notifications/initialized", None);
    let ctx = &session.ctx;
    for body in [
        Body::Single(Message::Request(init)),
        Body::Single(initialized.into()),
    ] {
        let begun = session.begin(&body, None, record.protocol_version, OnEnd::Keep)?;
        let charge = ctx.inbound.charge(0).ok_or(Error::InboundFull(0))?;
        // The reader, if any, is dropped: the answer is stored, and read by nobody.
        begun
            .deliver(Posted::new(Arc::clone(request), body, charge))
            .await?;
    }
    Ok(())
}

/// Answers, with errors, the requests the last holder began and did not answer, on their own
/// streams, and finishes those streams: no client waits forever for a dead node.
async fn answer_unfinished(ctx: &Context, store: &dyn EventStore, id: &str, generation: u64) {
    let unfinished = match store.unfinished(id).await {
        Ok(unfinished) => unfinished,
        Err(err) => {
            tracing::error!(session_id = id, error = %err, "event store: unfinished streams unknown; their requests stay unanswered");
            return;
        }
    };
    for stream in unfinished {
        if stream.stream >= base(generation) {
            continue;
        }
        if let Err(err) = answer_stream(ctx, store, id, &stream, generation).await {
            tracing::error!(session_id = id, stream = stream.stream, error = %err, "event store: could not answer a dead holder's requests");
        }
    }
}

async fn answer_stream(
    ctx: &Context,
    store: &dyn EventStore,
    id: &str,
    unfinished: &Unfinished,
    generation: u64,
) -> Result<(), StoreError> {
    let stream = unfinished.stream;
    let answered = answered(store, id, stream).await;
    // Past any index the dead holder gave out: it may have sent a client events it had not
    // stored yet, whose ids must not name these errors too.
    let mut index = base(generation);
    let error = ErrorObject::new(code::INTERNAL_ERROR, HOLDER_DIED);
    for request in &unfinished.requests {
        if answered.contains(request) {
            continue;
        }
        index += 1;
        let response = Response::error(Some(request.clone()), error.clone());
        let json = Bytes::from(Message::Response(response).to_vec());
        store.append(id, stream, index, json).await?;
    }
    store.stream_finished(id, stream).await;
    if let Some(cluster) = &ctx.config.cluster {
        cluster.written(id, stream).await;
    }
    Ok(())
}

/// The requests of `stream` answered already, as far as the store knows.
async fn answered(store: &dyn EventStore, id: &str, stream: u64) -> HashSet<Id> {
    let events = store.replay_after(id, stream, 0).await.unwrap_or_default();
    events
        .iter()
        .filter_map(|e| match mcp_jsonrpc::parse(&e.message) {
            Ok(Body::Single(Message::Response(r))) => r.id().cloned(),
            _ => None,
        })
        .collect()
}
