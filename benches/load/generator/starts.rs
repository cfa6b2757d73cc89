//! `--mode starts`: new clients in a closed loop, `C` at a time. Each start is a fresh
//! connection, the session's start (`initialize` and `notifications/initialized`; nothing per
//! request), one `tools/call echo` answered, and the session's end (DELETE, when the server
//! gave an id). Reports starts per second, the time from connecting to the first answer, and
//! the server's CPU per start: what a gateway pays for a new client (a child to spawn, or a
//! warm one to borrow).

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Barrier;

use super::calls::Plan;
use super::session::{Reply, Session, Target};
use crate::measure::{self, Phase, Tally};
use crate::report::CallsReport;

/// Runs `C` starters over the window and reports one "request" per start.
pub(crate) async fn run(plan: Plan) -> anyhow::Result<CallsReport> {
    let phase = Phase::default();
    let ready = Arc::new(Barrier::new(plan.concurrency + 1));
    let mut tasks = Vec::with_capacity(plan.concurrency);
    for n in 0..plan.concurrency {
        let (target, phase, ready) = (plan.target.clone(), phase.clone(), ready.clone());
        tasks.push(tokio::spawn(async move {
            ready.wait().await;
            starter(n, &target, &phase).await
        }));
    }
    ready.wait().await;
    let window = measure::window(&phase, &plan.window).await?;
    let mut all = Tally::default();
    for task in tasks {
        all.merge(task.await?);
    }
    Ok(window.report(all, plan.concurrency, plan.concurrency, None))
}

/// One starter: a new client after another until told to stop.
async fn starter(n: usize, target: &Target, phase: &Phase) -> Tally {
    let mut tally = Tally::default();
    for start in 0u64.. {
        if phase.is_stopping() {
            break;
        }
        let began = Instant::now();
        match once(target, &format!("s{n}-start{start}")).await {
            Ok(reply) if phase.is_measuring() => {
                tally.reply(reply.at.saturating_duration_since(began), Some(reply.kind));
            }
            Ok(_) => {}
            Err(err) => tally
                .errors
                .add(format!("starter {n}, start {start}: {err:#}")),
        }
    }
    tally
}

/// One new client: connect, start, one echo, end.
async fn once(target: &Target, text: &str) -> anyhow::Result<Reply> {
    let mut session = Session::connect(target).await?;
    session.start().await?;
    let reply = session.echo(text).await?;
    session.delete().await;
    Ok(reply)
}
