//! `--mode idle`: opens `N` sessions that then do nothing, and reports the server's resident
//! memory before and after.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::Semaphore;

use super::session::{Session, Target};
use crate::errors::Errors;
use crate::procfs::Proc;
use crate::report::IdleReport;

/// Sessions being opened at once.
const PARALLEL: usize = 32;

/// How long to wait once every session is open, before reading the server's memory: long
/// enough for the tasks the last sessions started to settle.
const SETTLE: Duration = Duration::from_secs(1);

/// Opens `sessions` sessions (the first as a warm-up, before the first reading) and reports.
/// With `close`, each session's connection is closed once it is initialized, so that only
/// the session's own state remains on the server; else every connection stays open, as an
/// idle client's keep-alive connection would.
pub(crate) async fn run(
    target: Target,
    sessions: usize,
    close: bool,
    server_pid: u32,
) -> anyhow::Result<IdleReport> {
    let server = Proc::Pid(server_pid);
    let mut warmup = Session::connect(&target).await?;
    warmup
        .initialize()
        .await
        .context("the warm-up session did not start")?;
    tokio::time::sleep(SETTLE).await;
    let rss_before_kib = server.rss_kib()?;

    let permits = Arc::new(Semaphore::new(PARALLEL));
    let mut tasks = Vec::with_capacity(sessions);
    for _ in 1..sessions {
        let (target, permits) = (target.clone(), permits.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = permits.acquire_owned().await?;
            let mut session = Session::connect(&target).await?;
            session.initialize().await?;
            anyhow::Ok(session)
        }));
    }
    let mut open = Vec::with_capacity(if close { 0 } else { sessions });
    let mut errors = Errors::default();
    let mut sessions_ok: usize = 1;
    for task in tasks {
        match task.await? {
            Ok(session) => {
                sessions_ok += 1;
                if !close {
                    open.push(session);
                }
            }
            Err(err) => errors.add(format!("{err:#}")),
        }
    }
    tokio::time::sleep(SETTLE).await;
    let rss_after_kib = server.rss_kib()?;
    drop(open);

    let (errors, error_samples) = errors.into_parts();
    let measured = sessions_ok.saturating_sub(1).max(1);
    Ok(IdleReport {
        sessions,
        sessions_ok,
        closed_connections: close,
        rss_before_kib,
        rss_after_kib,
        kib_per_session: (rss_after_kib as f64 - rss_before_kib as f64) / measured as f64,
        errors,
        error_samples,
    })
}
