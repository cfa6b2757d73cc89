//! Starting sessions: one per `initialize` (S6, S18), or one for a single POST or request;
//! each with the connection its application is to be handed.

use std::sync::Arc;

use bytes::Bytes;

use crate::core::error::Error;
use crate::core::owner::SessionOwner;
use crate::core::session::connection::ServerConnection;
use crate::core::session::state::incoming_channel;
use crate::core::session::{Ending, Lifetime, Session};
use crate::core::shared::{Caps, Shared};
use crate::core::store::event_store::StoreError;
use crate::core::store::session_store::SessionRecord;

impl Shared {
    /// S6: a new session, from a valid `initialize` (its JSON, for the session store). The
    /// caller has checked everything before: nothing is registered for a refused request
    /// (S18). At the cap, the least recently used idle session is evicted to make room.
    pub(crate) async fn start_session(
        self: &Arc<Self>,
        owner: Option<&SessionOwner>,
        client: Option<Arc<str>>,
        initialize: Bytes,
    ) -> Result<(Arc<Session>, ServerConnection), Error> {
        self.refuse_when_shutting_down("no new sessions")?;
        let id: Arc<str> = Arc::from(uuid::Uuid::new_v4().simple().to_string());
        let owner = owner.map(|o| Arc::clone(o.key()));
        let record = SessionRecord::new(&*id, initialize, owner.as_deref().map(str::to_owned));
        let (tx, rx) = incoming_channel(self.config.incoming_capacity);
        let session = Session::new(
            id,
            Arc::clone(self),
            tx,
            Lifetime::Session,
            owner,
            client,
            None,
        );
        let caps = Caps {
            total: self.config.max_sessions,
            per_client: self.config.max_sessions_per_client,
        };
        if let Some(evicted) = self.sessions.insert(Arc::clone(&session), caps)? {
            tracing::debug!(parent: &evicted.span, "evicted: a session cap was reached and it was the least recently used idle session of the client holding the most");
            #[cfg(feature = "otel")]
            evicted.ends_by(crate::core::telemetry::EndCause::Evicted);
            evicted.close(Ending::Abort).await;
        }
        if let Err(err) = self.record(&session, record).await {
            tracing::error!(parent: &session.span, session_id = %session.id, error = %err, "the shared records failed: session not started");
            self.sessions.remove(&session);
            return Err(Error::shared_store(err));
        }
        self.sessions.start_reaper(self);
        tracing::debug!(parent: &session.span, "session started");
        let connection = ServerConnection::new(rx, Arc::clone(&session));
        Ok((session, connection))
    }

    /// Records a new session where the nodes share records: with a cluster, the record and its
    /// holder (this node, generation 0) in one step, whose fence the session writes with.
    async fn record(&self, session: &Session, record: SessionRecord) -> Result<(), StoreError> {
        match (&self.config.cluster, &self.config.session_store) {
            (Some(cluster), _) => {
                let fence = cluster.start(&record).await?;
                session.set_fence(fence);
                Ok(())
            }
            (None, Some(store)) => store.create(record).await,
            (None, None) => Ok(()),
        }
    }

    /// Starts the application for a session that lives for one POST (stateless mode) or one
    /// request (2026-07-28); it is kept apart from the sessions clients name, for shutdown to
    /// see.
    pub(crate) fn start_transient(
        self: &Arc<Self>,
        lifetime: Lifetime,
    ) -> Result<(Arc<Session>, ServerConnection), Error> {
        self.refuse_when_shutting_down("no new requests")?;
        let (tx, rx) = incoming_channel(self.config.incoming_capacity);
        let session = Session::new(
            Arc::clone(&self.no_id),
            Arc::clone(self),
            tx,
            lifetime,
            None,
            None,
            None,
        );
        self.sessions.insert_transient(&session);
        let connection = ServerConnection::new(rx, Arc::clone(&session));
        Ok((session, connection))
    }

    /// The session named `id`, for a request made by `owner`: `None` when it is not here, or
    /// belongs to someone else (S7). A session known to the session store but held by no
    /// process of this one is not served here.
    pub(crate) async fn find_session(
        &self,
        id: &str,
        owner: Option<&SessionOwner>,
    ) -> Result<Arc<Session>, Error> {
        let Some(session) = self.sessions.get(id) else {
            if let Some(store) = &self.config.session_store
                && let Ok(Some(_)) = store.load(id).await
            {
                tracing::debug!(
                    session_id = id,
                    "session known to the session store but not held by this process"
                );
            }
            return Err(Error::SessionNotFound);
        };
        if !session.is_owned_by(owner.map(SessionOwner::as_str)) {
            tracing::warn!(parent: &session.span, session_id = %session.id, "a request of another owner named this session: answered as unknown");
            return Err(Error::SessionNotFound);
        }
        session.touch_record().await;
        Ok(session)
    }
}
