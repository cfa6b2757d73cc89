//! What `mcp-failover --json` prints and `mcp-load-suite` reads back, shared through `#[path]`.

use serde::{Deserialize, Serialize};

/// The failover trials of `mcp-failover`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct FailoverReport {
    /// Trials asked for.
    pub(crate) trials: usize,
    /// Each trial that ran to the end: milliseconds from `kill -9` of the holder to the first
    /// message of the new holder on the client's stream (the dead holder's error response).
    pub(crate) times_ms: Vec<f64>,
    /// The median of `times_ms`.
    pub(crate) median_ms: f64,
    /// Progress notifications that arrived after the kill (written before it), per trial.
    pub(crate) progress_after_kill: Vec<u32>,
    /// Trials whose session then served a call through the new holder.
    pub(crate) went_on: usize,
    /// Trials that failed, and the first few reasons.
    pub(crate) errors: u64,
    /// The first few errors.
    pub(crate) error_samples: Vec<String>,
}
