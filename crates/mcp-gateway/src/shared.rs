//! What every connection of the service shares: the options, the starter of children, and
//! the pool of the per-request clients.

use mcp_jsonrpc::Message;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::link::Link;
use crate::options::Options;
use crate::pool::{Pool, Warm};
use crate::start::Starter;

/// What the connections share; one per gateway.
pub(crate) struct Shared {
    pub(crate) options: Options,
    pub(crate) starter: Starter,
    pub(crate) pool: Pool,
}

impl Shared {
    /// Starts a child for the session `label`.
    pub(crate) fn start_child(
        &self,
        label: &str,
    ) -> Result<(Link, mpsc::Receiver<Message>), Error> {
        self.starter.start(label)
    }

    /// A warm child of the pool, for a per-request client.
    pub(crate) async fn warm(&self) -> Result<Warm, Error> {
        self.pool.warm(&self.starter, self.options.timeout()).await
    }

    /// Fills slot `index` of the pool.
    pub(crate) async fn fill(&self, index: usize) -> Result<Warm, Error> {
        self.pool
            .fill(index, &self.starter, self.options.timeout())
            .await
    }
}
