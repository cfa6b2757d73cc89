//! What a node does about its own lease (N8). While the lease does not hold, nothing of the
//! node's sessions is delivered or read; past a grace, their streams end, so that their
//! clients, and the nodes relaying them, look for the session again (another node may hold it
//! by then). Once the lease holds again under a new incarnation, the node claims its sessions
//! again, those nobody took over meanwhile, and ends its copies of the others; their readers
//! look again.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::core::Shared;
use crate::core::cluster::Cluster;

/// How long a node that cannot prove its lease keeps its sessions' streams open, silent: long
/// enough for a renewal after a pause, short enough that a client of a node cut off from the
/// records is not kept waiting.
const GRACE: Duration = Duration::from_secs(1);

/// How long a node waits before trying again to claim sessions the records could not be asked
/// about (they were out of reach).
const RETRY: Duration = Duration::from_secs(1);

/// Follows this node's lease for as long as the service lives.
pub(crate) async fn watch_lease(shared: Weak<Shared>, cluster: Arc<dyn Cluster>) {
    let lease = cluster.lease().clone();
    let mut seen = lease.changes();
    let mut pending = false;
    let mut streams_ended = false;
    loop {
        // A deadline, not a poll: the end of the lease and its grace, a retry, or a change.
        let graced = lease
            .ends()
            .map(|ends| tokio::time::Instant::from_std(ends + GRACE))
            .filter(|_| !streams_ended);
        let retry = pending.then(|| tokio::time::Instant::now() + RETRY);
        let wake = [graced, retry].into_iter().flatten().min();
        let changed = lease.changed_after(seen);
        match wake {
            Some(at) => {
                let _ = tokio::time::timeout_at(at, changed).await;
            }
            None => {
                changed.await;
            }
        }
        seen = lease.changes();
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if !lease.is_valid() {
            if !streams_ended
                && lease
                    .ends()
                    .is_some_and(|e| e + GRACE <= std::time::Instant::now())
            {
                streams_ended = true;
                tracing::warn!(
                    node = cluster.node(),
                    "this node cannot prove its lease: its sessions' streams end"
                );
                for session in shared.sessions.all() {
                    session.end_readers();
                }
            }
            continue;
        }
        streams_ended = false;
        pending = !reclaim(&shared, &*cluster).await;
        for session in shared.sessions.all() {
            session.wake_readers();
        }
    }
}

/// Claims every session held under an earlier incarnation for this one, or ends this node's
/// copy of it; whether every claim got an answer.
async fn reclaim(shared: &Shared, cluster: &dyn Cluster) -> bool {
    let incarnation = cluster.lease().incarnation();
    let mut answered = true;
    for session in shared.sessions.all() {
        let Some(fence) = session.fence().filter(|f| f.incarnation != incarnation) else {
            continue;
        };
        match cluster.reclaim(&session.id, fence).await {
            Ok(Some(fence)) => {
                session.set_fence(fence);
                tracing::info!(parent: &session.span, session_id = %session.id, "session claimed again after this node's lease lapsed");
            }
            Ok(None) => session.step_down(),
            Err(err) => {
                answered = false;
                tracing::warn!(parent: &session.span, session_id = %session.id, error = %err, "could not claim the session again; trying again");
            }
        }
    }
    answered
}
