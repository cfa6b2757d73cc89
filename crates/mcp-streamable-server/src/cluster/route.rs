//! Where the session a request names is served: here, by a live holder elsewhere (the request
//! goes there), or here after taking it over from a holder whose lease lapsed (N1, N4).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cluster::Nodes;
use crate::core::cluster::{Holder, Location, Member, TakeOver};
use crate::core::owner::SessionOwner;
use crate::core::takeover::Restored;
use crate::core::{Error, Session, Shared};

/// How many times a request looks for its session's holder before it gives up (503): each
/// look may wait for a lease to lapse or the records to settle, so this bounds a request to a
/// few leases.
const LOOKS: usize = 8;

/// How long, and how many times, a request waits for the restoring of a session that this node
/// took over for another request.
const RESTORE_WAIT: Duration = Duration::from_millis(100);
const RESTORE_WAITS: usize = 50;

/// Where a session is served.
pub(crate) enum Route {
    /// Here, as it was.
    Local(Arc<Session>),
    /// By a live holder elsewhere, to which the request goes.
    Remote(Target),
    /// Here, taken over: its application must be started before the request is served.
    Restored(Restored),
}

/// A live holder of a session, and where it listens.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) holder: Holder,
    pub(crate) address: SocketAddr,
    /// Until when its lease is sure to be good: a holder that fails a forward is not taken for
    /// dead before then.
    pub(crate) until: Instant,
}

impl Target {
    fn new(holder: Holder, member: &Member) -> Target {
        Target {
            holder,
            address: member.address,
            until: member.until,
        }
    }
}

impl Nodes {
    /// Where session `id` is served, for a request made by `owner` (S7).
    pub(crate) async fn route(
        &self,
        shared: &Arc<Shared>,
        id: &str,
        owner: Option<&SessionOwner>,
    ) -> Result<Route, Error> {
        for _ in 0..LOOKS {
            let location = match shared.sessions.get(id) {
                Some(session) if session.is_held_now() => {
                    return shared.find_session(id, owner).await.map(Route::Local);
                }
                // This node cannot prove it holds the session now: the records say whether
                // another node took it over meanwhile (then this copy is stale, N8), or it is
                // still this node's to claim again.
                Some(session) => {
                    let location = self.locate(id).await?;
                    match &location {
                        Location::Held(holder)
                            if holder.node == self.cluster.node()
                                && Some(holder.fence) == session.fence() =>
                        {
                            return shared.find_session(id, owner).await.map(Route::Local);
                        }
                        _ => session.step_down(),
                    }
                    location
                }
                None => match self.directory.get(id) {
                    Some(holder) => Location::Held(holder),
                    None => self.locate(id).await?,
                },
            };
            match &location {
                Location::Unknown => return Err(Error::SessionNotFound),
                Location::Held(holder)
                    if self.is_this_node(&holder.node, holder.fence.incarnation) =>
                {
                    return self.restoring(shared, id, owner).await.map(Route::Local);
                }
                Location::Held(holder) => {
                    if let Some(target) = self.live(holder) {
                        self.directory.learn(id, holder.clone());
                        return Ok(Route::Remote(target));
                    }
                }
                _ => {}
            }
            // Its holder's lease lapsed (or this node's earlier incarnation held it), or nobody
            // holds it: take it over, if nobody did first.
            self.directory.forget(id);
            match self
                .cluster
                .take_over(id, &location)
                .await
                .map_err(Error::shared_store)?
            {
                TakeOver::Taken(fence) => {
                    return shared.restore(id, owner, fence).await.map(Route::Restored);
                }
                TakeOver::Alive(member) => {
                    if let Location::Held(holder) = location {
                        self.directory.learn(id, holder.clone());
                        return Ok(Route::Remote(Target::new(holder, &member)));
                    }
                }
                TakeOver::Wait(pause) => tokio::time::sleep(pause).await,
                TakeOver::Moved => {}
            }
        }
        Err(Error::shared_store(
            "the session's holder could not be settled: the records keep changing",
        ))
    }

    async fn locate(&self, id: &str) -> Result<Location, Error> {
        self.cluster.locate(id).await.map_err(Error::shared_store)
    }

    /// Whether `node` as `incarnation` is this node as it is now.
    pub(crate) fn is_this_node(&self, node: &str, incarnation: u64) -> bool {
        node == self.cluster.node() && incarnation == self.cluster.lease().incarnation()
    }

    /// `holder`, if the membership records last said its lease is good.
    fn live(&self, holder: &Holder) -> Option<Target> {
        let member = self.cluster.member(&holder.node)?;
        (member.incarnation == holder.fence.incarnation && member.until > Instant::now())
            .then(|| Target::new(holder.clone(), &member))
    }

    /// A session this node holds by the records but not in memory: another request is
    /// restoring it (waited for, a bounded while); else it ended here.
    async fn restoring(
        &self,
        shared: &Arc<Shared>,
        id: &str,
        owner: Option<&SessionOwner>,
    ) -> Result<Arc<Session>, Error> {
        for _ in 0..RESTORE_WAITS {
            let restored = shared.restored.notified();
            if shared.sessions.get(id).is_some() {
                break;
            }
            let _ = tokio::time::timeout(RESTORE_WAIT, restored).await;
        }
        shared.find_session(id, owner).await
    }
}
