//! The node's lease, and the watch on the leases of the holders that live watches name.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::time::{MissedTickBehavior, interval};

use crate::backend::Shared;
use crate::error::Error;

/// Sets this node's liveness key, alive for one lease.
pub(crate) async fn renew(shared: &Shared) -> Result<(), Error> {
    let mut cmd = redis::cmd("SET");
    cmd.arg(shared.keys.node(&shared.options.node))
        .arg(1)
        .arg("PX")
        .arg(shared.options.lease_ms());
    shared.query::<()>(&cmd).await
}

/// Renews the lease every third of it, for as long as the backend lives, whatever Redis does:
/// a failed renewal is logged and the next one comes on time.
pub(crate) async fn keep(shared: Arc<Shared>) {
    let mut tick = interval(shared.options.lease / 3);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(error) = renew(&shared).await {
            tracing::warn!(%error, node = %shared.options.node, "could not renew the node's lease");
        }
    }
}

/// Every third of a lease: tells the watches whose holder's lease lapsed, and lets the pub/sub
/// task drop the channels of sessions nobody watches any more.
pub(crate) async fn watch_holders(shared: Arc<Shared>) {
    let mut tick = interval(shared.options.lease / 3);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if shared.watches.prune() {
            shared.subscriptions_changed.notify_one();
        }
        let holders: Vec<String> = shared.watches.holders().into_iter().collect();
        if holders.is_empty() {
            continue;
        }
        match lapsed(&shared, &holders).await {
            Ok(lapsed) => {
                for holder in lapsed {
                    shared.watches.holder_lost(&holder);
                }
            }
            // Redis cannot tell: nobody is told anything until it can.
            Err(error) => tracing::debug!(%error, "could not check the holders' leases"),
        }
    }
}

/// The holders among `holders` whose liveness key is gone, in one round trip.
async fn lapsed(shared: &Shared, holders: &[String]) -> Result<HashSet<String>, Error> {
    let mut pipe = redis::pipe();
    for holder in holders {
        pipe.cmd("EXISTS").arg(shared.keys.node(holder));
    }
    let alive: Vec<bool> = shared.pipe(&pipe).await?;
    Ok(holders
        .iter()
        .zip(alive)
        .filter(|(_, alive)| !alive)
        .map(|(holder, _)| holder.clone())
        .collect())
}
