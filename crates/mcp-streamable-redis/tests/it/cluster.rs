//! The `Cluster` on Redis: holders, lapses, forwards, watches.

use std::time::{Duration, Instant};

use bytes::Bytes;
use mcp_streamable_redis::{Error, RedisBackend};
use mcp_streamable_server::{Change, Cluster, Location, SessionRecord, SessionStore, Watch};

use crate::support::{self, PATIENCE, eventually, node, options, redis};

async fn create(backend: &RedisBackend, id: &str) {
    let record = SessionRecord::new(id, Bytes::from_static(b"{}"), None);
    backend.session_store().create(record).await.unwrap();
    backend.cluster().hold(id).await.unwrap();
}

/// Waits until `node`'s lease has lapsed in Redis.
async fn lapsed(redis: &mcp_streamable_redis::testing::RedisServer, node: &str) {
    let raw = support::raw(redis).await;
    let key = format!("t:node:{node}");
    eventually("the lease lapses", || {
        let mut raw = raw.clone();
        let key = key.clone();
        async move {
            let n: u64 = redis::cmd("EXISTS")
                .arg(&key)
                .query_async(&mut raw)
                .await
                .unwrap();
            n == 0
        }
    })
    .await;
}

/// The next change of `watch` that is not a write, within [`PATIENCE`].
async fn next_other_than_written(watch: &mut Watch) -> Change {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, watch.recv()).await {
            Ok(Some(Change::Written { .. })) => continue,
            Ok(Some(change)) => return change,
            Ok(None) => panic!("the watch ended"),
            Err(_) => panic!("no change within {PATIENCE:?}"),
        }
    }
}

fn error_of(error: mcp_streamable_server::StoreError) -> Box<Error> {
    error.downcast::<Error>().expect("the backend's error")
}

#[tokio::test]
async fn the_holder_is_here_for_itself_and_elsewhere_for_the_others() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let b = node(&redis, "b", options()).await;
    create(&a, "s").await;
    assert_eq!(a.cluster().node(), "a");
    assert_eq!(a.cluster().locate("s").await.unwrap(), Location::Here);
    assert_eq!(
        b.cluster().locate("s").await.unwrap(),
        Location::Elsewhere { node: "a".into() }
    );
    assert_eq!(
        b.cluster().locate("nobody").await.unwrap(),
        Location::Unknown
    );
}

#[tokio::test]
async fn a_lapsed_holder_is_taken_over_once_with_a_new_generation() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let b = node(&redis, "b", options()).await;
    let c = node(&redis, "c", options()).await;
    create(&a, "s").await;
    drop(a);
    lapsed(&redis, "a").await;
    assert_eq!(
        b.cluster().locate("s").await.unwrap(),
        Location::TakenOver { generation: 1 }
    );
    assert_eq!(b.cluster().locate("s").await.unwrap(), Location::Here);
    assert_eq!(
        c.cluster().locate("s").await.unwrap(),
        Location::Elsewhere { node: "b".into() }
    );
    drop(b);
    lapsed(&redis, "b").await;
    assert_eq!(
        c.cluster().locate("s").await.unwrap(),
        Location::TakenOver { generation: 2 }
    );
}

#[tokio::test]
async fn of_two_nodes_racing_for_a_lapsed_session_exactly_one_wins() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let b = node(&redis, "b", options()).await;
    let c = node(&redis, "c", options()).await;
    for i in 0..20 {
        create(&a, &format!("s{i}")).await;
    }
    drop(a);
    lapsed(&redis, "a").await;
    let (bc, cc) = (b.cluster(), c.cluster());
    for i in 0..20 {
        let id = format!("s{i}");
        let (from_b, from_c) = tokio::join!(bc.locate(&id), cc.locate(&id));
        let (from_b, from_c) = (from_b.unwrap(), from_c.unwrap());
        let taken = Location::TakenOver { generation: 1 };
        let won_by_b = from_b == taken && from_c == Location::Elsewhere { node: "b".into() };
        let won_by_c = from_c == taken && from_b == Location::Elsewhere { node: "c".into() };
        assert!(won_by_b || won_by_c, "{id}: {from_b:?} {from_c:?}");
    }
}

#[tokio::test]
async fn a_released_session_held_by_nobody_is_taken_over_with_a_fresh_generation() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let b = node(&redis, "b", options()).await;
    create(&a, "s").await;
    a.cluster().release("s").await;
    let mut raw = support::raw(&redis).await;
    assert!(support::keys(&mut raw, "t:holder:*").await.is_empty());
    assert_eq!(
        b.cluster().locate("s").await.unwrap(),
        Location::TakenOver { generation: 1 }
    );
    b.cluster().release("s").await;
    assert_eq!(
        a.cluster().locate("s").await.unwrap(),
        Location::TakenOver { generation: 2 }
    );
}

#[tokio::test]
async fn a_forward_reaches_the_holder_and_brings_its_answer_back() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let b = node(&redis, "b", options()).await;
    let mut inbox = a.cluster().inbox().expect("the inbox, the first time");
    assert!(a.cluster().inbox().is_none());
    let server = tokio::spawn(async move {
        for _ in 0..3 {
            let forwarded = inbox.recv().await.unwrap();
            let mut answer = b"re: ".to_vec();
            answer.extend_from_slice(&forwarded.envelope);
            forwarded.reply.send(Bytes::from(answer)).unwrap();
        }
    });
    for i in 0..3 {
        let envelope = Bytes::from(format!("envelope {i}"));
        let answer = b.cluster().forward("a", envelope).await.unwrap();
        assert_eq!(answer, format!("re: envelope {i}"));
    }
    server.await.unwrap();
}

#[tokio::test]
async fn a_forward_to_a_node_that_is_gone_fails_at_once() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let b = node(
        &redis,
        "b",
        options().forward_timeout(Duration::from_millis(100)),
    )
    .await;
    let error = error_of(
        b.cluster()
            .forward("nobody", Bytes::new())
            .await
            .unwrap_err(),
    );
    assert!(error.is_forward() && !error.is_timeout(), "{error}");
    assert_eq!(
        error.to_string(),
        "no node listens on the target node's inbox"
    );
    drop(a);
    // The dead node's pub/sub connection closes: forwards to it fail at once, not on a timeout.
    let cluster = b.cluster();
    eventually("forwards to the dropped node fail at once", || {
        let cluster = cluster.clone();
        async move {
            let error = error_of(cluster.forward("a", Bytes::new()).await.unwrap_err());
            error.is_forward() && !error.is_timeout()
        }
    })
    .await;
}

#[tokio::test]
async fn a_full_inbox_refuses_at_once_and_a_dropped_envelope_fails_its_forward() {
    let redis = redis();
    let a = node(&redis, "a", options().inbox_capacity(1)).await;
    let b = node(
        &redis,
        "b",
        options().forward_timeout(Duration::from_secs(3600)),
    )
    .await;
    let inbox = a.cluster().inbox().unwrap();
    let first = tokio::spawn({
        let cluster = b.cluster();
        async move { cluster.forward("a", Bytes::from_static(b"1")).await }
    });
    eventually("the first envelope waits in the inbox", || {
        let waiting = inbox.len();
        async move { waiting == 1 }
    })
    .await;
    let error = error_of(
        b.cluster()
            .forward("a", Bytes::from_static(b"2"))
            .await
            .unwrap_err(),
    );
    assert!(error.is_forward() && !error.is_timeout(), "{error}");
    assert_eq!(error.to_string(), "the target node's inbox is full");
    drop(inbox);
    let error = error_of(first.await.unwrap().unwrap_err());
    assert_eq!(
        error.to_string(),
        "the target node dropped the envelope unanswered"
    );
}

#[tokio::test]
async fn a_forward_nobody_answers_times_out_and_is_forgotten() {
    let redis = redis();
    let _a = node(&redis, "a", options()).await;
    let b = node(
        &redis,
        "b",
        options().forward_timeout(Duration::from_millis(200)),
    )
    .await;
    // Node a never takes its inbox: the envelope waits there unanswered.
    let error = error_of(b.cluster().forward("a", Bytes::new()).await.unwrap_err());
    assert!(error.is_timeout(), "{error}");
    let none = node(&redis, "c", options().max_pending_forwards(0)).await;
    let error = error_of(none.cluster().forward("a", Bytes::new()).await.unwrap_err());
    assert_eq!(
        error.to_string(),
        "too many forwards are waiting for answers"
    );
}

#[tokio::test]
async fn a_watch_hears_of_writes_on_any_node_and_of_its_holder_s_lapse() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let b = node(&redis, "b", options()).await;
    let c = node(&redis, "c", options()).await;
    create(&b, "s").await;
    let mut watch = a.cluster().watch("s", "b");
    // The subscription is made in the background: write until it is heard.
    let deadline = Instant::now() + PATIENCE;
    let heard = loop {
        assert!(
            Instant::now() < deadline,
            "no write heard within {PATIENCE:?}"
        );
        c.cluster().written("s", 7).await;
        if let Ok(Some(change)) =
            tokio::time::timeout(Duration::from_millis(50), watch.recv()).await
        {
            break change;
        }
    };
    assert_eq!(heard, Change::Written { stream: 7 });
    // Another session's writes are not heard.
    c.cluster().written("t", 1).await;
    c.cluster().written("s", 8).await;
    assert_eq!(
        tokio::time::timeout(PATIENCE, watch.recv()).await.unwrap(),
        Some(Change::Written { stream: 8 })
    );
    drop(b);
    assert_eq!(
        next_other_than_written(&mut watch).await,
        Change::HolderLost
    );
}

#[tokio::test]
async fn a_session_s_channel_is_subscribed_once_and_dropped_with_its_last_watch() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let first = a.cluster().watch("s", "a");
    let second = a.cluster().watch("s", "a");
    let raw = support::raw(&redis).await;
    let subscribers = move || {
        let mut raw = raw.clone();
        async move {
            let reply: (String, u64) = redis::cmd("PUBSUB")
                .arg("NUMSUB")
                .arg("t:watch:{s}")
                .query_async(&mut raw)
                .await
                .unwrap();
            reply.1
        }
    };
    eventually("the channel is subscribed", || {
        let count = subscribers();
        async move { count.await == 1 }
    })
    .await;
    drop(first);
    drop(second);
    eventually("the channel is unsubscribed", || {
        let count = subscribers();
        async move { count.await == 0 }
    })
    .await;
}
