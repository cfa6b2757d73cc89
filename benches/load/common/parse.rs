//! Command-line values and latency percentiles, shared by the load generators through
//! `#[path]`.

use std::time::Duration;

use anyhow::Context as _;

/// `value` of `arg` as a number.
pub(crate) fn number<T: std::str::FromStr>(arg: &str, value: &str) -> anyhow::Result<T> {
    value
        .parse()
        .ok()
        .with_context(|| format!("{arg} takes a whole number, not {value:?}"))
}

/// `value` of `arg` as seconds, fractions allowed.
pub(crate) fn seconds(arg: &str, value: &str) -> anyhow::Result<Duration> {
    value
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .with_context(|| format!("{arg} takes seconds, not {value:?}"))
}

/// The `q` quantile of sorted nanoseconds, in microseconds (nearest rank).
pub(crate) fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1e3
}
