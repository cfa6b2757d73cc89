//! Following a stream that another node writes: its events read from the shared event store,
//! woken by the cluster's watch, until the stream is finished; when its holder dies, the
//! session is located again (and taken over here if nobody has), so that the new holder's
//! errors for the unanswered requests arrive.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::core::cluster::{Change, Watch};
use crate::core::event_store::{ReplayError, StoredEvent};
use crate::core::state::STANDALONE;
use crate::http::app::Server;
use crate::http::body::replayed;
use crate::http::envelope::Envelope;
use crate::http::remote::{self, Target};

/// What a follower does next.
pub(crate) enum Step {
    /// Events after the last one given.
    Events(Vec<StoredEvent>),
    /// Nothing came for a keep-alive period.
    Idle,
    /// The stream is over, moved to another reader, or cannot be followed any further.
    End,
}

/// One stream of a session held elsewhere, followed from the store.
pub(crate) struct Follow {
    server: Arc<Server>,
    session: String,
    stream: u64,
    /// The last index given out.
    after: u64,
    holder: String,
    watch: Watch,
    /// The request whose parts a takeover starts the application with.
    request: Arc<http::request::Parts>,
    /// For the standalone stream: its token, and what fires when the holder says another
    /// reader took it over.
    moved: Option<(u64, oneshot::Receiver<()>)>,
    /// Whether the store had the stream finished when last read.
    finished: bool,
    /// For a POST's stream: the responses still to come, after which it is over. The store is
    /// then not asked whether the stream is finished, which for a finished stream may cost it
    /// a walk through the session's events.
    responses_left: Option<usize>,
}

impl Follow {
    /// Follows `stream` after index `after`. The watch starts before anything is read, so that
    /// no write falls between the read and the wait.
    pub(crate) fn new(
        server: Arc<Server>,
        session: String,
        stream: u64,
        after: u64,
        holder: String,
        request: Arc<http::request::Parts>,
    ) -> Option<Follow> {
        let watch = server.ctx.config.cluster.as_ref()?.watch(&session, &holder);
        Some(Follow {
            server,
            session,
            stream,
            after,
            holder,
            watch,
            request,
            moved: None,
            finished: false,
            responses_left: None,
        })
    }

    /// The stream is a POST's, over once `responses` responses were read.
    pub(crate) fn until_answered(&mut self, responses: usize) {
        self.responses_left = Some(responses);
    }

    /// Ends when `moved` fires: the holder says another reader took the standalone stream
    /// over, which this node follows under `token`.
    pub(crate) fn until_moved(&mut self, (token, moved): (u64, oneshot::Receiver<()>)) {
        self.moved = Some((token, moved));
    }

    /// What comes next: events, or, after a keep-alive period of nothing, `Idle`.
    pub(crate) async fn next(&mut self, keep_alive: Option<Duration>) -> Step {
        loop {
            if self.finished {
                return Step::End;
            }
            match self.read().await {
                Ok(events) if !events.is_empty() => return Step::Events(events),
                Ok(_) if self.finished => return Step::End,
                Ok(_) => {}
                Err(()) => return Step::End,
            }
            match self.wait(keep_alive).await {
                Waited::Written => {}
                Waited::Idle => return Step::Idle,
                Waited::End => return Step::End,
            }
        }
    }

    /// The events after the last given; notes whether the stream was finished before they
    /// were read (its last event is then among them).
    async fn read(&mut self) -> Result<Vec<StoredEvent>, ()> {
        let Some(store) = self.server.ctx.config.event_store.clone() else {
            return Err(());
        };
        let finished = self.stream != STANDALONE
            && self.responses_left.is_none()
            && matches!(
                store.is_finished(&self.session, self.stream).await,
                Ok(Some(true))
            );
        let events = match store
            .replay_after(&self.session, self.stream, self.after)
            .await
        {
            Ok(events) => events,
            // Nothing stored yet, or not yet as far as the client read from the holder.
            Err(ReplayError::UnknownStream | ReplayError::UnknownEvent) if !finished => Vec::new(),
            Err(err) => {
                tracing::debug!(session_id = %self.session, stream = self.stream, error = %err, "followed stream cannot be read further");
                return Err(());
            }
        };
        if let Some(last) = events.last() {
            self.after = last.index;
        }
        self.finished = finished || self.answered(&events);
        Ok(events)
    }

    /// Counts the responses among `events`: whether the last one expected came.
    fn answered(&mut self, events: &[StoredEvent]) -> bool {
        let Some(left) = &mut self.responses_left else {
            return false;
        };
        let responses = events.iter().filter(|e| is_response(&e.message)).count();
        *left = left.saturating_sub(responses);
        *left == 0
    }

    async fn wait(&mut self, keep_alive: Option<Duration>) -> Waited {
        let idle = async {
            match keep_alive {
                Some(every) => tokio::time::sleep(every).await,
                None => std::future::pending().await,
            }
        };
        let moved = async {
            match &mut self.moved {
                Some((_, moved)) => {
                    let _ = moved.await;
                }
                None => std::future::pending().await,
            }
        };
        // Any write wakes: a full watch drops changes, so the one read may be of another
        // stream when this one's was dropped.
        let change = async {
            match self.watch.recv().await {
                Some(Change::Written { .. }) => true,
                Some(Change::HolderLost) | None => false,
            }
        };
        let change = tokio::select! {
            change = change => change,
            () = idle => return Waited::Idle,
            () = moved => return Waited::End,
        };
        if change {
            Waited::Written
        } else {
            self.relocate().await
        }
    }

    /// The holder is gone: finds the session's holder again, taking it over here if nobody
    /// has. A standalone stream ends (its client reconnects to the new holder); a request
    /// stream goes on, to the errors the new holder writes for what its old one left.
    async fn relocate(&mut self) -> Waited {
        if self.stream == STANDALONE {
            return Waited::End;
        }
        let target = remote::locate(&self.server, &self.session, &self.request).await;
        let holder = match target {
            Ok(Target::Local(_)) => self
                .server
                .ctx
                .config
                .cluster
                .as_ref()
                .map(|c| c.node().to_owned()),
            Ok(Target::Remote(node)) => Some(node),
            Err(_) => None,
        };
        let (Some(holder), Some(cluster)) = (holder, self.server.ctx.config.cluster.as_ref())
        else {
            return Waited::End;
        };
        self.watch = cluster.watch(&self.session, &holder);
        self.holder = holder;
        Waited::Written
    }

    /// Sends `prelude`, then the stream, to `frames` as SSE events, until it ends or the client
    /// leaves.
    pub(crate) async fn relay(mut self, frames: mpsc::Sender<Bytes>, prelude: Vec<Bytes>) {
        let keep_alive = self.server.ctx.config.keep_alive;
        for bytes in prelude {
            if frames.send(bytes).await.is_err() {
                return self.leave().await;
            }
        }
        loop {
            let step = tokio::select! {
                step = self.next(keep_alive) => step,
                () = frames.closed() => break,
            };
            let bytes = match step {
                Step::Events(events) => replayed(self.stream, &events),
                Step::Idle => vec![Bytes::from_static(b": keep-alive\n\n")],
                Step::End => break,
            };
            for bytes in bytes {
                if frames.send(bytes).await.is_err() {
                    break;
                }
            }
        }
        self.leave().await;
    }

    /// A standalone stream's client left: its holder stops draining it for this node.
    async fn leave(self) {
        let Some((token, moved)) = self.moved else {
            return;
        };
        drop(moved);
        self.server.relay.unfollow(token);
        let Some(cluster) = self.server.ctx.config.cluster.clone() else {
            return;
        };
        let leave = Envelope::Leave {
            node: cluster.node().to_owned(),
            token,
        };
        if let Err(err) = cluster.forward(&self.holder, leave.to_bytes()).await {
            tracing::debug!(error = %err, holder = self.holder, "could not tell the holder a standalone stream's client left");
        }
    }
}

/// Whether a stored message is a response (to a request of the client's).
pub(crate) fn is_response(message: &[u8]) -> bool {
    matches!(
        mcp_jsonrpc::parse(message),
        Ok(mcp_jsonrpc::Body::Single(mcp_jsonrpc::Message::Response(_)))
    )
}

enum Waited {
    Written,
    Idle,
    End,
}
