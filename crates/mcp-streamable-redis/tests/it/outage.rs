//! Redis stopped and started again: calls fail fast, then work again by themselves.

use std::time::{Duration, Instant};

use bytes::Bytes;
use mcp_streamable_redis::Error;
use mcp_streamable_server::{
    Change, Cluster, EventStore, ReplayError, SessionRecord, SessionStore,
};

use crate::support::{PATIENCE, eventually, node, options, redis};

/// The command timeout of these tests' nodes.
const TIMEOUT: Duration = Duration::from_millis(300);

/// Generous room over the command timeout, for a loaded machine: what is checked is that a
/// call does not hang, not how fast it fails.
const FAILS_WITHIN: Duration = Duration::from_secs(5);

fn is_redis_error(error: &mcp_streamable_server::StoreError) -> bool {
    error.downcast_ref::<Error>().is_some_and(Error::is_redis)
}

#[tokio::test]
async fn with_redis_down_every_call_fails_fast_and_all_works_again_when_it_is_back() {
    let mut redis = redis();
    let a = node(&redis, "a", options().command_timeout(TIMEOUT)).await;
    let b = node(&redis, "b", options().command_timeout(TIMEOUT)).await;
    let record = SessionRecord::new("s", Bytes::from_static(b"{}"), None);
    a.session_store().create(record.clone()).await.unwrap();
    let mut watch = b.cluster().watch("s", "a");
    assert_eq!(
        tokio::time::timeout(PATIENCE, watch.recv()).await.unwrap(),
        Some(Change::Written { stream: 0 }),
        "the wake once the channel is subscribed"
    );

    redis.stop();
    let started = Instant::now();
    let error = a.session_store().load("s").await.unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    let error = a
        .event_store()
        .append("s", 1, 1, Bytes::new())
        .await
        .unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    assert!(matches!(
        a.event_store().replay_after("s", 1, 0).await,
        Err(ReplayError::Failed(_))
    ));
    let error = a.cluster().locate("s").await.unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    let error = b.cluster().forward("a", Bytes::new()).await.unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    // Those that cannot fail say nothing, and return.
    a.cluster().written("s", 1).await;
    a.cluster().release("s").await;
    a.session_store().remove("s").await;
    assert!(
        started.elapsed() < FAILS_WITHIN * 9,
        "{:?}",
        started.elapsed()
    );

    redis.restart().expect("redis-server restarts");
    // A restarted Redis kept nothing; the nodes carry on with what comes next.
    let store = a.session_store();
    eventually("the command connection is back", || {
        let store = store.clone();
        let record = record.clone();
        async move { store.create(record).await.is_ok() }
    })
    .await;
    assert_eq!(a.session_store().load("s").await.unwrap(), Some(record));

    // The pub/sub connections came back and subscribed again: the inbox and the watch.
    let mut inbox = a.cluster().inbox().unwrap();
    let server = tokio::spawn(async move {
        let forwarded = inbox.recv().await.unwrap();
        forwarded.reply.send(forwarded.envelope).unwrap();
    });
    let cluster = b.cluster();
    eventually("a forward goes through again", || {
        let cluster = cluster.clone();
        async move {
            cluster
                .forward("a", Bytes::from_static(b"ping"))
                .await
                .is_ok()
        }
    })
    .await;
    server.await.unwrap();
    // The watch is woken: writes may have been published while the connection was down.
    assert!(matches!(
        tokio::time::timeout(PATIENCE, watch.recv()).await.unwrap(),
        Some(Change::Written { .. })
    ));
    let deadline = Instant::now() + PATIENCE;
    let heard = loop {
        assert!(
            Instant::now() < deadline,
            "no write heard within {PATIENCE:?}"
        );
        a.cluster().written("s", 5).await;
        if let Ok(Some(change)) =
            tokio::time::timeout(Duration::from_millis(50), watch.recv()).await
        {
            break change;
        }
    };
    assert_eq!(heard, Change::Written { stream: 5 });
}

#[tokio::test]
async fn each_call_fails_within_the_command_timeout_when_redis_does_not_answer() {
    let mut redis = redis();
    let a = node(&redis, "a", options().command_timeout(TIMEOUT)).await;
    redis.stop();
    for _ in 0..3 {
        let started = Instant::now();
        assert!(a.session_store().load("s").await.is_err());
        assert!(started.elapsed() < FAILS_WITHIN, "{:?}", started.elapsed());
    }
}

#[tokio::test]
async fn the_lease_is_renewed_again_once_redis_is_back() {
    let mut redis = redis();
    let _a = node(&redis, "a", options().command_timeout(TIMEOUT)).await;
    redis.restart().expect("redis-server restarts");
    // The restarted Redis kept nothing: the renewal sets the liveness key again by itself.
    let raw = crate::support::raw(&redis).await;
    eventually("a's liveness key is back", || {
        let mut raw = raw.clone();
        async move {
            let n: u64 = redis::cmd("EXISTS")
                .arg("t:node:a")
                .query_async(&mut raw)
                .await
                .unwrap();
            n == 1
        }
    })
    .await;
}

/// Redis that does not answer (frozen, as a stalled server or a network dropping packets):
/// the calls give up at the command timeout, then work again once it answers.
#[tokio::test]
async fn with_redis_frozen_calls_time_out_and_work_again_once_it_answers() {
    let redis = redis();
    let a = node(&redis, "a", options().command_timeout(TIMEOUT)).await;
    let b = node(&redis, "b", options().command_timeout(TIMEOUT)).await;
    let record = SessionRecord::new("s", Bytes::from_static(b"{}"), None);
    a.session_store().create(record.clone()).await.unwrap();
    redis.freeze().unwrap();
    let started = Instant::now();
    let error = a.session_store().load("s").await.unwrap_err();
    let error = error.downcast::<Error>().unwrap();
    assert!(error.is_timeout() && error.is_redis(), "{error}");
    let error = b.cluster().forward("a", Bytes::new()).await.unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    assert!(matches!(
        a.event_store().replay_after("s", 1, 0).await,
        Err(ReplayError::Failed(_))
    ));
    assert!(started.elapsed() < FAILS_WITHIN, "{:?}", started.elapsed());
    redis.thaw().unwrap();
    let store = a.session_store();
    eventually("the store answers again", || {
        let store = store.clone();
        async move { matches!(store.load("s").await, Ok(Some(_))) }
    })
    .await;
    let mut inbox = a.cluster().inbox().unwrap();
    // Redis runs what it was sent while frozen once it thaws: the forward that timed out
    // arrives too, and is answered to nobody.
    let server = tokio::spawn(async move {
        while let Some(forwarded) = inbox.recv().await {
            let _ = forwarded.reply.send(forwarded.envelope);
        }
    });
    let cluster = b.cluster();
    eventually("a forward goes through again", || {
        let cluster = cluster.clone();
        async move { cluster.forward("a", Bytes::from_static(b"x")).await.is_ok() }
    })
    .await;
    server.abort();
}

#[tokio::test]
async fn a_node_cannot_start_without_redis_and_says_so_at_once() {
    let mut redis = redis();
    let url = redis.url();
    redis.stop();
    let started = Instant::now();
    let error =
        mcp_streamable_redis::RedisBackend::connect(&url, options().command_timeout(TIMEOUT))
            .await
            .unwrap_err();
    assert!(error.is_redis(), "{error}");
    assert!(started.elapsed() < FAILS_WITHIN, "{:?}", started.elapsed());
}

/// The total bound on what every session keeps is Redis's own `maxmemory`: with
/// `noeviction`, a full Redis refuses writes, and every call says so at once, without a panic;
/// once room is made, all works again.
#[tokio::test]
async fn a_full_redis_refuses_writes_with_errors_and_takes_them_again_once_there_is_room() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let mut raw = crate::support::raw(&redis).await;
    let set = |name: &'static str, value: &'static str| {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("SET").arg(name).arg(value);
        cmd
    };
    let used: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut raw)
        .await
        .unwrap();
    let used: u64 = used
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let limit = (used + 256 * 1024).to_string();
    let _: () = set("maxmemory-policy", "noeviction")
        .query_async(&mut raw)
        .await
        .unwrap();
    let mut cmd = redis::cmd("CONFIG");
    cmd.arg("SET").arg("maxmemory").arg(&limit);
    let _: () = cmd.query_async(&mut raw).await.unwrap();
    let (sessions, events) = (a.session_store(), a.event_store());
    let message = Bytes::from(vec![b'x'; 16 * 1024]);
    let mut refused = None;
    for n in 0..200 {
        let id = format!("s{n}");
        let record = SessionRecord::new(id.as_str(), Bytes::from_static(b"{}"), None);
        let stored = match sessions.create(record).await {
            Ok(()) => events.append(&id, 1, 1, message.clone()).await,
            Err(error) => Err(error),
        };
        if let Err(error) = stored {
            refused = Some(error);
            break;
        }
    }
    let error = refused.expect("a full Redis refused a write within 200 sessions");
    assert!(is_redis_error(&error), "{error}");
    // Room again: the writes go through.
    let _: () = set("maxmemory", "0").query_async(&mut raw).await.unwrap();
    let record = SessionRecord::new("after", Bytes::from_static(b"{}"), None);
    sessions.create(record).await.unwrap();
    events.append("after", 1, 1, message).await.unwrap();
    assert_eq!(events.replay_after("after", 1, 0).await.unwrap().len(), 1);
    assert!(matches!(
        events.replay_after("after", 1, 1).await,
        Ok(ref none) if none.is_empty()
    ));
}
