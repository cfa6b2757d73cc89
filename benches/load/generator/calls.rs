//! `--mode calls`: `C` sessions, each calling `echo` in a closed loop; throughput, latency,
//! errors and the server's CPU per request over a measured window after a warm-up.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Barrier;

use super::session::{Session, Target};
use crate::measure::{self, Phase, Tally};
use crate::report::CallsReport;

/// What the closed loop needs to know.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The server, and how to speak to it.
    pub(crate) target: Target,
    /// Sessions, each with its connection.
    pub(crate) concurrency: usize,
    /// The window, and the processes it watches.
    pub(crate) window: measure::Plan,
}

/// Runs the closed loop and reports.
pub(crate) async fn run(plan: Plan) -> anyhow::Result<CallsReport> {
    let phase = Phase::default();
    // Every session is initialized before the warm-up starts.
    let ready = Arc::new(Barrier::new(plan.concurrency + 1));
    let mut tasks = Vec::with_capacity(plan.concurrency);
    for n in 0..plan.concurrency {
        let (target, phase, ready) = (plan.target.clone(), phase.clone(), ready.clone());
        tasks.push(tokio::spawn(session(n, target, phase, ready)));
    }
    ready.wait().await;
    let window = measure::window(&phase, &plan.window).await?;
    let mut all = Tally::default();
    let mut sessions_ok = 0;
    for task in tasks {
        let (tally, ran) = task.await?;
        sessions_ok += usize::from(ran);
        all.merge(tally);
    }
    Ok(window.report(all, plan.concurrency, sessions_ok, None))
}

/// One session: initialize (unless per-request), wait for the others, call until told to stop,
/// end the session. What it saw, and whether it ran to the end.
async fn session(n: usize, target: Target, phase: Phase, ready: Arc<Barrier>) -> (Tally, bool) {
    let mut tally = Tally::default();
    let started = async {
        let mut session = Session::connect(&target).await?;
        session.start().await?;
        anyhow::Ok(session)
    }
    .await;
    ready.wait().await;
    let mut session = match started {
        Ok(session) => session,
        Err(err) => {
            tally
                .errors
                .add(format!("session {n} did not start: {err:#}"));
            return (tally, false);
        }
    };
    let mut text = String::new();
    for call in 0u64.. {
        if phase.is_stopping() {
            break;
        }
        text.clear();
        // Unique per request: the session and the call.
        let _ = write!(text, "s{n}-c{call}");
        let sent = Instant::now();
        match session.echo(&text).await {
            Ok(reply) if phase.is_measuring() => {
                tally.reply(reply.at.saturating_duration_since(sent), Some(reply.kind));
            }
            Ok(_) => {}
            Err(err) => {
                tally
                    .errors
                    .add(format!("session {n}, call {call}: {err:#}"));
                if session.is_closed() {
                    tally
                        .errors
                        .add(format!("session {n}: connection lost, session ended"));
                    return (tally, false);
                }
            }
        }
    }
    session.delete().await;
    (tally, true)
}
