//! `--mode death`: how long a client waits to learn that the stdio server behind a gateway
//! died. Per trial, a new session asks its child for its process id (the `pid` tool of
//! `benches/peers/gateways/echo_child.py`), starts a `sleep` call that the child would answer
//! a minute later, and once that call has been in flight for a moment, kills the child with
//! SIGKILL; the time runs from the kill to the call's end, whatever it is: an error response,
//! a tool result marked `isError`, an HTTP error or the connection closed. A call still waiting after `BOUND` counts as never
//! told.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::session::{Session, Target};
use crate::report::DeathReport;
use crate::stats::median;

/// How long the `sleep` call is in flight before the kill: long enough for the gateway to
/// have written it to the child.
const IN_FLIGHT: Duration = Duration::from_millis(200);

/// How long a client is given to see the error: a gateway slower than this is not telling.
const BOUND: Duration = Duration::from_secs(10);

/// What the child is asked to sleep: far longer than `BOUND`, so that only its death ends
/// the call in time.
const SLEEP_MS: u64 = 60_000;

/// Runs `trials` trials, one after the other, and reports.
pub(crate) async fn run(target: Target, trials: usize) -> anyhow::Result<DeathReport> {
    let mut report = DeathReport {
        trials,
        ..DeathReport::default()
    };
    for trial in 0..trials {
        match once(&target).await {
            Ok(Some((ms, saw))) => {
                report.seen_ms.push(ms);
                if report.samples.len() < 3 {
                    report.samples.push(saw);
                }
            }
            Ok(None) => report.not_seen += 1,
            Err(err) => report.errors.push(format!("trial {trial}: {err:#}")),
        }
    }
    report.median_ms = Some(median(report.seen_ms.clone())).filter(|ms| ms.is_finite());
    Ok(report)
}

/// One trial: the milliseconds from the kill to the error and what the error was, or `None`
/// when none came within `BOUND`.
async fn once(target: &Target) -> anyhow::Result<Option<(f64, String)>> {
    let mut session = Session::connect(target).await?;
    session.start().await?;
    let reply = session.call("pid", "{}").await?;
    let pid: u32 = pid_of(reply.result.get())?;
    let call = tokio::spawn(async move {
        let result = session
            .call("sleep", &format!(r#"{{"ms":{SLEEP_MS}}}"#))
            .await;
        (result, Instant::now())
    });
    tokio::time::sleep(IN_FLIGHT).await;
    let killed = Instant::now();
    let status = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()?;
    if !status.success() {
        call.abort();
        bail!("kill -9 {pid} failed ({status})");
    }
    let Ok(ended) = tokio::time::timeout(BOUND, call).await else {
        return Ok(None);
    };
    let (result, at) = ended?;
    let ms = at.saturating_duration_since(killed).as_secs_f64() * 1e3;
    match result {
        // A tool error result is how some gateways tell (PyPI's mcp-proxy): the client sees it.
        Ok(reply) if is_tool_error(reply.result.get()) => Ok(Some((
            ms,
            shorten(&format!("tool error result {}", reply.result)),
        ))),
        Ok(reply) => bail!("the call was answered after its child was killed: {reply:?}"),
        Err(err) => Ok(Some((ms, shorten(&format!("{err:#}"))))),
    }
}

/// The process id in the `pid` tool's result, `{"content":[{"type":"text","text":"123"}]}`.
fn pid_of(result: &str) -> anyhow::Result<u32> {
    let value: serde_json::Value = serde_json::from_str(result)?;
    value["content"][0]["text"]
        .as_str()
        .and_then(|text| text.parse().ok())
        .with_context(|| format!("no process id in {result}"))
}

/// Whether a `tools/call` result says it failed (`"isError": true`).
fn is_tool_error(result: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(result)
        .is_ok_and(|value| value["isError"] == serde_json::Value::Bool(true))
}

fn shorten(text: &str) -> String {
    text.chars().take(160).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pid_is_read_from_the_tool_result() {
        let result = r#"{"content":[{"type":"text","text":"4242"}]}"#;
        assert_eq!(pid_of(result).unwrap(), 4242);
        assert!(pid_of(r#"{"content":[]}"#).is_err());
        assert!(is_tool_error(r#"{"content":[],"isError":true}"#));
        assert!(!is_tool_error(r#"{"content":[]}"#));
    }
}
