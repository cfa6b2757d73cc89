//! What the gateway comparison runs and what it measured: shared by the runner (`mod.rs`) and
//! the section it writes (`render.rs`).

use std::path::PathBuf;

use crate::report::{CallsReport, DeathReport, IdleReport};
use crate::suite::kinds::Family;

/// What the comparison runs.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) root: PathBuf,
    pub(crate) keys: Option<Vec<String>>,
    pub(crate) concurrency: usize,
    pub(crate) duration: f64,
    pub(crate) warmup: f64,
    pub(crate) runs: usize,
    pub(crate) idle_sessions: usize,
    pub(crate) death_trials: usize,
}

/// What `mcp-load` measures in the closed-loop part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Measure {
    /// `--mode calls`: requests per second.
    Calls(Family),
    /// `--mode starts`: new clients per second.
    Starts(Family),
}

impl Measure {
    pub(super) const ALL: [Measure; 4] = [
        Measure::Calls(Family::Sessions),
        Measure::Calls(Family::PerRequest),
        Measure::Starts(Family::Sessions),
        Measure::Starts(Family::PerRequest),
    ];

    pub(super) fn family(self) -> Family {
        match self {
            Measure::Calls(family) | Measure::Starts(family) => family,
        }
    }

    pub(super) fn mode(self) -> &'static str {
        match self {
            Measure::Calls(_) => "calls",
            Measure::Starts(_) => "starts",
        }
    }
}

/// Everything measured, by gateway key.
#[derive(Debug, Default)]
pub(crate) struct Results {
    pub(crate) loops: Vec<(&'static str, Measure, Vec<CallsReport>)>,
    pub(crate) idle: Vec<(&'static str, Vec<IdleReport>)>,
    pub(crate) death: Vec<(&'static str, Vec<DeathReport>)>,
    /// The 1-minute load average at each measurement's start: the lowest and the highest.
    pub(crate) load: (f64, f64),
    /// Measurements that failed to run, with why.
    pub(crate) failures: Vec<String>,
}
