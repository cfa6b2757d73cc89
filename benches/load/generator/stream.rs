//! `--mode stream`: one session receives `N` notifications on its standalone (GET) stream;
//! the server's resident memory is read along the way, to show it does not grow with the
//! session's age.
//!
//! It needs a server with the `flood {from, count}` tool (`mcp-flood`): each call sends `count`
//! `notifications/message` whose `data` is the sequence number, `from` first, on the
//! standalone stream, then returns. The client calls it in batches and waits for each batch
//! to arrive before the next, so that the reader is never far behind (a server rightly
//! disconnects a reader too far behind, S22).

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use mcp_jsonrpc::{Body, Message};
use mcp_sse::Scanner;
use serde::Deserialize;
use tokio::sync::watch;

use super::session::{Session, Target};
use crate::errors::Errors;
use crate::procfs::Proc;
use crate::report::StreamReport;

/// The first memory reading, after this many notifications.
const FIRST_SAMPLE: u64 = 10_000;
/// Then one every this many.
const SAMPLE_EVERY: u64 = 100_000;
/// How long a batch may take to arrive.
const BATCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the flood and reports.
pub(crate) async fn run(
    target: Target,
    notifications: u64,
    batch: u64,
    server_pid: u32,
) -> anyhow::Result<StreamReport> {
    let mut session = Session::connect(&target).await?;
    session.initialize().await?;
    let mut reader = session.another_connection().await?;
    let stream = reader.get_stream().await?;
    let (progress, mut received) = watch::channel(0u64);
    let reading = tokio::spawn(read_stream(
        stream.into_body(),
        notifications,
        Proc::Pid(server_pid),
        progress,
    ));

    let start = Instant::now();
    let mut errors = Errors::default();
    let mut from = 0;
    while from < notifications {
        let count = batch.min(notifications - from);
        let arguments = format!(r#"{{"from":{from},"count":{count}}}"#);
        if let Err(err) = session.call("flood", &arguments).await {
            errors.add(format!("flood from {from}: {err:#}"));
            break;
        }
        from += count;
        let arrived = tokio::time::timeout(BATCH_TIMEOUT, received.wait_for(|&n| n >= from))
            .await
            .map(|waited| waited.is_ok());
        match arrived {
            Ok(true) => {}
            Ok(false) => break, // The reader stopped: it says why.
            Err(_) => {
                errors.add(format!(
                    "notifications {}..{from} did not arrive within {BATCH_TIMEOUT:?}",
                    *received.borrow()
                ));
                break;
            }
        }
    }
    let (reader_errors, samples, last) = reading.await?;
    errors.merge(reader_errors);
    session.delete().await;

    let received = samples.last().map_or(0, |&(n, _)| n);
    let seconds = last.saturating_duration_since(start).as_secs_f64();
    let first = samples.iter().find(|&&(n, _)| n >= FIRST_SAMPLE);
    let growth_percent = match (first, samples.last()) {
        (Some(&(_, early)), Some(&(_, late))) if early > 0 => {
            (late as f64 / early as f64 - 1.0) * 100.0
        }
        _ => 0.0,
    };
    let (errors, error_samples) = errors.into_parts();
    Ok(StreamReport {
        notifications,
        received,
        seconds,
        per_second: received as f64 / seconds.max(1e-9),
        rss_samples_kib: samples,
        growth_percent,
        errors,
        error_samples,
    })
}

/// Reads the stream until `total` notifications came in order: the errors, the memory
/// readings `(count, KiB)` (the last one at the last notification received) and when the
/// last one came.
async fn read_stream(
    mut body: Incoming,
    total: u64,
    server: Proc,
    progress: watch::Sender<u64>,
) -> (Errors, Vec<(u64, u64)>, Instant) {
    let mut errors = Errors::default();
    let mut samples = Vec::new();
    let mut scanner = Scanner::new();
    let mut count = 0u64;
    'read: while count < total {
        let data = match body.frame().await {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            Some(Err(err)) => {
                errors.add(format!("the GET stream failed after {count}: {err}"));
                break;
            }
            None => {
                errors.add(format!("the GET stream ended after {count} notifications"));
                break;
            }
        };
        scanner.feed(&data);
        loop {
            let event = match scanner.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(err) => {
                    errors.add(format!("bad SSE after {count}: {err}"));
                    break 'read;
                }
            };
            if event.data.is_empty() {
                continue; // The priming event.
            }
            match sequence_number(event.data.as_bytes()) {
                Ok(n) if n == count => count += 1,
                Ok(n) => {
                    errors.add(format!("notification {n} where {count} was expected"));
                    break 'read;
                }
                Err(err) => {
                    errors.add(format!("after {count}: {err:#}"));
                    break 'read;
                }
            }
            if count == FIRST_SAMPLE || count.is_multiple_of(SAMPLE_EVERY) {
                sample(server, count, &mut samples, &mut errors);
            }
        }
        progress.send_replace(count);
    }
    let last = Instant::now();
    if samples.last().is_none_or(|&(n, _)| n != count) {
        sample(server, count, &mut samples, &mut errors);
    }
    (errors, samples, last)
}

/// Reads the server's memory after `count` notifications.
fn sample(server: Proc, count: u64, samples: &mut Vec<(u64, u64)>, errors: &mut Errors) {
    match server.rss_kib() {
        Ok(kib) => samples.push((count, kib)),
        Err(err) => errors.add(format!("{err:#}")),
    }
}

/// The `data` of a `notifications/message`.
fn sequence_number(json: &[u8]) -> anyhow::Result<u64> {
    #[derive(Deserialize)]
    struct Params {
        data: u64,
    }
    let Ok(Body::Single(Message::Notification(note))) = mcp_jsonrpc::parse(json) else {
        bail!("not a notification: {}", String::from_utf8_lossy(json));
    };
    let params = note.params.context("a notification without params")?;
    let params: Params = serde_json::from_str(params.get())
        .with_context(|| format!("unexpected params: {}", params.get()))?;
    Ok(params.data)
}
