//! What the backend leaves in Redis: expiry, DELETE, prefixes, touch.

use std::time::Duration;

use bytes::Bytes;
use mcp_jsonrpc::Id;
use mcp_streamable_server::{
    Cluster, EventStore, Location, ReplayError, SessionRecord, SessionStore,
};

use crate::support::{self, eventually, node, options, redis};

/// Starts session `id` on `backend` as the server does: record, holder, a stream and events.
async fn start_session(backend: &mcp_streamable_redis::RedisBackend, id: &str) {
    let record = SessionRecord::new(id, Bytes::from_static(b"{\"method\":\"initialize\"}"), None);
    backend.session_store().create(record).await.unwrap();
    backend.cluster().hold(id).await.unwrap();
    let events = backend.event_store();
    events.stream_began(id, 1, &[Id::from(1)]).await.unwrap();
    events
        .append(id, 1, 1, Bytes::from_static(b"{}"))
        .await
        .unwrap();
}

#[tokio::test]
async fn delete_leaves_no_key_of_the_session() {
    let redis = redis();
    let backend = node(&redis, "n", options()).await;
    start_session(&backend, "s").await;
    let _watch = backend.cluster().watch("s", "n");
    let mut raw = support::raw(&redis).await;
    assert_eq!(
        support::keys(&mut raw, "t:*").await,
        [
            "t:holder:{s}",
            "t:log:{s}",
            "t:meta:{s}",
            "t:node:n",
            "t:session:{s}"
        ]
    );
    backend.session_store().remove("s").await;
    backend.event_store().session_closed("s").await;
    backend.cluster().release("s").await;
    assert_eq!(support::keys(&mut raw, "t:*").await, ["t:node:n"]);
    assert_eq!(
        backend.cluster().locate("s").await.unwrap(),
        Location::Unknown
    );
}

#[tokio::test]
async fn every_key_of_a_session_expires_with_it() {
    let redis = redis();
    let backend = node(
        &redis,
        "n",
        options().session_expiry(Duration::from_secs(2)),
    )
    .await;
    start_session(&backend, "s").await;
    let mut raw = support::raw(&redis).await;
    for key in ["t:holder:{s}", "t:log:{s}", "t:meta:{s}", "t:session:{s}"] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut raw)
            .await
            .unwrap();
        assert!(ttl > 0 && ttl <= 2500, "{key}: {ttl}");
    }
    eventually("the session's keys expire", || {
        let mut raw = raw.clone();
        async move { support::keys(&mut raw, "t:*{s}").await.is_empty() }
    })
    .await;
    assert_eq!(backend.session_store().load("s").await.unwrap(), None);
}

#[tokio::test]
async fn a_touch_keeps_every_key_of_the_session_alive() {
    let redis = redis();
    let backend = node(
        &redis,
        "n",
        options().session_expiry(Duration::from_secs(600)),
    )
    .await;
    start_session(&backend, "s").await;
    let keys = ["t:holder:{s}", "t:log:{s}", "t:meta:{s}", "t:session:{s}"];
    let mut raw = support::raw(&redis).await;
    for key in keys {
        let _: () = redis::cmd("PEXPIRE")
            .arg(key)
            .arg(60_000)
            .query_async(&mut raw)
            .await
            .unwrap();
    }
    backend
        .session_store()
        .touch("s", std::time::SystemTime::now())
        .await
        .unwrap();
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut raw)
            .await
            .unwrap();
        // 600 s and a quarter, less what the test took.
        assert!(ttl > 700_000, "{key}: {ttl}");
    }
}

#[tokio::test]
async fn two_prefixes_on_one_redis_do_not_see_each_other() {
    let redis = redis();
    let a = node(&redis, "a", options().prefix("one")).await;
    let b = node(&redis, "b", options().prefix("two")).await;
    start_session(&a, "s").await;
    assert_eq!(b.session_store().load("s").await.unwrap(), None);
    assert!(matches!(
        b.event_store().replay_after("s", 1, 0).await,
        Err(ReplayError::UnknownStream)
    ));
    assert_eq!(b.cluster().locate("s").await.unwrap(), Location::Unknown);
    assert!(
        b.cluster()
            .forward("a", Bytes::from_static(b"x"))
            .await
            .is_err()
    );
    let mut raw = support::raw(&redis).await;
    assert_eq!(support::keys(&mut raw, "two:*").await, ["two:node:b"]);
}
