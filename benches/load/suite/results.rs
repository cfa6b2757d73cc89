//! Everything the suite measured, section by section, for the report to write.

use super::cells::Calls;
use super::client::ClientRuns;
use super::kinds::ServerKind;
use super::nodes::NodesResults;
use super::otlp_sink::Received;
use crate::report::{IdleReport, StreamReport};

/// Everything the suite measured.
#[derive(Debug, Default)]
pub(crate) struct Results {
    /// The runs of each server at each concurrency.
    pub(crate) calls: Calls,
    /// What the OTLP sink of each server exporting to one (`ours-otlp`) received over its runs.
    pub(crate) exported: Vec<(&'static ServerKind, Received)>,
    /// Idle sessions: the server's label and the report.
    pub(crate) idle: Vec<(&'static str, IdleReport)>,
    /// The standalone-stream check.
    pub(crate) stream: Option<StreamReport>,
    /// Client throughput: each client's runs (`None`: not run).
    pub(crate) clients: Option<Vec<ClientRuns>>,
    /// Idle sessions in Redis and the failover trials.
    pub(crate) nodes: NodesResults,
}
