//! The throughput runs of the servers, by server and concurrency, and their medians: what
//! the tables, the ratios and the section of several nodes read.

use super::kinds::{Family, Peer, ServerKind};
use crate::report::CallsReport;
use crate::stats::median;

/// The runs of one server at one concurrency.
#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) server: &'static ServerKind,
    pub(crate) concurrency: usize,
    pub(crate) runs: Vec<CallsReport>,
}

/// The medians of a cell's runs (errors are summed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    pub(crate) rps: f64,
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
    pub(crate) cpu: Option<f64>,
    pub(crate) gen_share: f64,
    pub(crate) errors: u64,
    /// How the replies came, over all runs.
    pub(crate) json: u64,
    pub(crate) sse: u64,
}

impl Cell {
    /// The median over the runs of the CPU per request of the side process `name` (Redis, the
    /// proxy), when measured.
    pub(crate) fn side_cpu(&self, name: &str) -> Option<f64> {
        let values: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|run| {
                run.side_cpu_us_per_req
                    .iter()
                    .find(|(side, _)| side == name)
                    .map(|(_, us)| *us)
            })
            .collect();
        (!values.is_empty()).then(|| median(values))
    }

    /// The medians of the runs.
    pub(crate) fn summary(&self) -> Summary {
        let median_of = |f: fn(&CallsReport) -> f64| median(self.runs.iter().map(f).collect());
        let cpu: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| r.server_cpu_us_per_req)
            .collect();
        Summary {
            rps: median_of(|r| r.rps),
            p50: median_of(|r| r.p50_us),
            p99: median_of(|r| r.p99_us),
            max: median_of(|r| r.max_us),
            cpu: (!cpu.is_empty()).then(|| median(cpu)),
            gen_share: median_of(|r| r.client_cpu_share),
            errors: self.runs.iter().map(|r| r.errors).sum(),
            json: self.runs.iter().map(|r| r.json_replies).sum(),
            sse: self.runs.iter().map(|r| r.sse_replies).sum(),
        }
    }
}

/// The runs of every server at every concurrency, in table order.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    cells: Vec<Cell>,
}

impl Calls {
    /// `cells`, those without a run left out.
    pub(crate) fn new(mut cells: Vec<Cell>) -> Calls {
        cells.retain(|c| !c.runs.is_empty());
        Calls { cells }
    }

    /// Whether no server ran.
    pub(crate) fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The cells, in table order.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, Cell> {
        self.cells.iter()
    }

    /// The runs of the server `key` at `concurrency`.
    pub(crate) fn cell(&self, key: &str, concurrency: usize) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.server.key == key && c.concurrency == concurrency)
    }

    /// The medians of the server `key` at `concurrency`.
    pub(crate) fn find(&self, key: &str, concurrency: usize) -> Option<Summary> {
        self.cells
            .iter()
            .find(|c| c.server.key == key && c.concurrency == concurrency)
            .map(Cell::summary)
    }

    /// The `peer`'s server of `family`, at `concurrency`.
    pub(crate) fn find_peer(
        &self,
        peer: Peer,
        family: Family,
        concurrency: usize,
    ) -> Option<Summary> {
        self.cells
            .iter()
            .find(|c| {
                c.server.peer == peer && c.server.family == family && c.concurrency == concurrency
            })
            .map(Cell::summary)
    }

    /// The concurrencies run, ascending.
    pub(crate) fn concurrencies(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.cells.iter().map(|c| c.concurrency).collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}
