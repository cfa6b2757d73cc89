//! The callers of a client library's closed loop: `C` tasks sharing its one session, each
//! calling with a unique text, until the window ([`crate::measure`]) is over.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::measure::{self, Phase, Tally, Window};

/// The longest one call may take before it counts as an error: far beyond any healthy reply on
/// a loopback, and it bounds how long a caller can outlive the window.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long starting the session (`initialize`, `notifications/initialized`) may take.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long ending the session (DELETE, closing the client) may take.
pub(crate) const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the closed loop needs to know.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Concurrent callers.
    pub(crate) callers: usize,
    /// The window, and the server it watches.
    pub(crate) window: measure::Plan,
}

/// A client with a session started: what each caller calls, from its own task.
pub(crate) trait Echo: Clone + Send + Sync + 'static {
    /// Calls `tools/call echo {text}` and checks that the result is `text`.
    fn echo(&self, text: String) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Whether the session can no longer carry calls, so a caller should stop.
    fn is_closed(&self) -> bool;
}

/// What one run measured, before it is labelled as a report.
#[derive(Debug)]
pub(crate) struct Measured {
    /// The window.
    pub(crate) window: Window,
    /// What the callers saw, and the errors of the session.
    pub(crate) tally: Tally,
}

/// Runs `plan.callers` callers of `client` through the warm-up and the window, then waits for
/// each to finish its call in flight (at most [`CALL_TIMEOUT`]).
pub(crate) async fn run<E: Echo>(client: E, plan: &Plan) -> anyhow::Result<Measured> {
    let phase = Phase::default();
    let mut tasks = Vec::with_capacity(plan.callers);
    for n in 0..plan.callers {
        tasks.push(tokio::spawn(caller(n, client.clone(), phase.clone())));
    }
    let window = measure::window(&phase, &plan.window).await?;
    let mut tally = Tally::default();
    for task in tasks {
        tally.merge(task.await?);
    }
    Ok(Measured { window, tally })
}

/// One caller: a unique text per call, one call at a time, until told to stop.
async fn caller<E: Echo>(n: usize, client: E, phase: Phase) -> Tally {
    let mut tally = Tally::default();
    for call in 0u64.. {
        if phase.is_stopping() {
            break;
        }
        // Unique per request: the caller and the call.
        let text = format!("c{n}-{call}");
        let sent = Instant::now();
        match tokio::time::timeout(CALL_TIMEOUT, client.echo(text)).await {
            Ok(Ok(())) if phase.is_measuring() => tally.reply(sent.elapsed(), None),
            Ok(Ok(())) => {}
            Ok(Err(err)) => tally
                .errors
                .add(format!("caller {n}, call {call}: {err:#}")),
            Err(_) => tally.errors.add(format!(
                "caller {n}, call {call}: no reply within {CALL_TIMEOUT:?}"
            )),
        }
        if client.is_closed() {
            tally
                .errors
                .add(format!("caller {n}: the session is closed, caller stopped"));
            break;
        }
    }
    tally
}
