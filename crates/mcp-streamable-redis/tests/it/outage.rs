//! Redis stopped, frozen, or full: calls fail fast, the lease fences the node, and everything
//! works again by itself.

use std::time::{Duration, Instant};

use bytes::Bytes;
use mcp_streamable_redis::{Error, Options, RedisBackend};
use mcp_streamable_server::{Cluster, EventStore, ReplayError, SessionRecord, SessionStore, Write};

use crate::support::{LEASE, Redis, eventually, options};

/// The command timeout of these tests' nodes.
const TIMEOUT: Duration = Duration::from_millis(300);

/// Generous room over the command timeout, for a loaded machine: what is checked is that a
/// call does not hang, not how fast it fails.
const FAILS_WITHIN: Duration = Duration::from_secs(5);

fn is_redis_error(error: &mcp_streamable_server::StoreError) -> bool {
    error.downcast_ref::<Error>().is_some_and(Error::is_redis)
}

fn record() -> SessionRecord {
    SessionRecord::new("s", Bytes::from_static(b"{}"), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_every_call_fails_fast_and_all_works_again_when_it_is_back() {
    let mut redis = Redis::single();
    let a = redis.node("a", options().command_timeout(TIMEOUT)).await;
    let fence = a.cluster().start(&record()).await.unwrap();
    redis.server().stop();
    let started = Instant::now();
    let error = a.session_store().load("s").await.unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    let write = [Write::Open { stream: 1 }];
    let error = a
        .event_store()
        .write("s", Some(fence), &write)
        .await
        .unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    assert!(matches!(
        a.event_store().replay_after("s", 1, 0).await,
        Err(ReplayError::Failed(_))
    ));
    let error = a.cluster().locate("s").await.unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    // Those that cannot fail say nothing, and return.
    a.cluster().end("s", fence).await;
    a.session_store().remove("s").await;
    assert!(
        started.elapsed() < FAILS_WITHIN * 6,
        "{:?}",
        started.elapsed()
    );
    // Its lease lapses by its own clock: the node fences itself.
    let lease = a.cluster().lease().clone();
    eventually("the lease lapses", || {
        let lease = lease.clone();
        async move { !lease.is_valid() }
    })
    .await;
    redis.server().restart().expect("redis-server restarts");
    // A restarted Redis kept nothing: the node registers again, as a new incarnation.
    eventually("the lease holds again", || {
        let lease = lease.clone();
        async move { lease.is_valid() && lease.incarnation() != fence.incarnation }
    })
    .await;
    let store = a.session_store();
    eventually("the command connection is back", || {
        let store = store.clone();
        async move { store.load("s").await.is_ok() }
    })
    .await;
    a.cluster().start(&record()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_frozen_calls_time_out_and_the_node_comes_back_once_it_answers() {
    let mut redis = Redis::single();
    let a = redis.node("a", options().command_timeout(TIMEOUT)).await;
    let fence = a.cluster().start(&record()).await.unwrap();
    redis.server().freeze().unwrap();
    let started = Instant::now();
    let error = a.cluster().locate("s").await.unwrap_err();
    assert!(
        error.downcast_ref::<Error>().is_some_and(Error::is_timeout),
        "{error}"
    );
    assert!(started.elapsed() < FAILS_WITHIN, "{:?}", started.elapsed());
    let lease = a.cluster().lease().clone();
    eventually("the lease lapses while Redis is frozen", || {
        let lease = lease.clone();
        async move { !lease.is_valid() }
    })
    .await;
    tokio::time::sleep(LEASE).await;
    redis.server().thaw().unwrap();
    // Past its lease by Redis's clock too: back as a new incarnation, which claims its session.
    eventually("the lease holds again", || {
        let lease = lease.clone();
        async move { lease.is_valid() }
    })
    .await;
    assert_ne!(lease.incarnation(), fence.incarnation);
    let reclaimed = a.cluster().reclaim("s", fence).await.unwrap();
    assert!(reclaimed.is_some(), "nobody took it meanwhile");
}

/// A stall of Redis shorter than two thirds of the lease costs the node nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_stall_of_redis_does_not_fence_the_node() {
    let mut redis = Redis::single();
    let lease = Duration::from_millis(900);
    let a = redis.node("a", options().lease(lease)).await;
    let held = a.cluster().lease().clone();
    let incarnation = held.incarnation();
    // DEBUG SLEEP blocks Redis for a third of the lease.
    let port = redis.server().port().to_string();
    let sleeping = std::thread::spawn(move || {
        std::process::Command::new("redis-cli")
            .args(["-p", &port, "debug", "sleep", "0.3"])
            .output()
            .unwrap()
    });
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        assert!(held.is_valid(), "the lease lapsed during a short stall");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    sleeping.join().unwrap();
    assert_eq!(held.incarnation(), incarnation);
}

#[tokio::test]
async fn a_node_cannot_start_without_redis_and_says_so_at_once() {
    let redis = Redis::single();
    let url = match &redis {
        Redis::Single(server) => server.url(),
        Redis::Cluster(_) => unreachable!(),
    };
    drop(redis);
    let started = Instant::now();
    let error = RedisBackend::connect(&url, Options::default().command_timeout(TIMEOUT))
        .await
        .unwrap_err();
    assert!(error.is_redis(), "{error}");
    assert!(started.elapsed() < FAILS_WITHIN, "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_redis_refuses_writes_with_errors_and_takes_them_again_once_there_is_room() {
    let redis = Redis::single();
    let a = redis.node("a", options()).await;
    let fence = a.cluster().start(&record()).await.unwrap();
    redis.cli(&["config", "set", "maxmemory-policy", "noeviction"]);
    redis.cli(&["config", "set", "maxmemory", "1"]);
    let write = [Write::Append {
        stream: 1,
        index: 1,
        message: Bytes::from_static(b"{}"),
    }];
    let error = a
        .event_store()
        .write("s", Some(fence), &write)
        .await
        .unwrap_err();
    assert!(is_redis_error(&error), "{error}");
    redis.cli(&["config", "set", "maxmemory", "0"]);
    a.event_store()
        .write("s", Some(fence), &write)
        .await
        .unwrap();
}
