//! The `EventStore` contract, as the in-memory store's tests state it, on Redis and on a Redis
//! Cluster; and what only a shared store does: forwards begun once, fences, the resume window,
//! messages too large to keep.

use std::time::Duration;

use bytes::Bytes;
use mcp_jsonrpc::{Body, Id, Message};
use mcp_streamable_redis::RedisEventStore;
use mcp_streamable_server::{
    Begun, Cluster, EventStore, Fence, NotHolder, ReplayError, SessionRecord, Unfinished, Write,
};

use crate::support::{Redis, on_both, options};

/// What the store charges per event on top of its bytes.
const OVERHEAD: usize = 64;

fn msg(n: usize) -> Bytes {
    Bytes::from(vec![b'x'; n])
}

fn append(stream: u64, index: u64, message: Bytes) -> Write {
    Write::Append {
        stream,
        index,
        message,
    }
}

async fn write(store: &RedisEventStore, writes: &[Write]) {
    store.write("a", None, writes).await.unwrap();
}

async fn indices(store: &RedisEventStore, stream: u64, after: u64) -> Vec<u64> {
    store
        .replay_after("a", stream, after)
        .await
        .unwrap()
        .iter()
        .map(|e| e.index)
        .collect()
}

async fn replays_after_an_index_in_order(redis: Redis) {
    let s = redis.node("n", options()).await.event_store();
    let writes: Vec<Write> = (1..5)
        .map(|i| append(1, i, Bytes::from(format!("m{i}"))))
        .collect();
    write(&s, &writes).await;
    let events = s.replay_after("a", 1, 2).await.unwrap();
    assert_eq!(events.iter().map(|e| e.index).collect::<Vec<_>>(), [3, 4]);
    assert_eq!(events[0].message, "m3");
    assert!(s.replay_after("a", 1, 4).await.unwrap().is_empty());
    assert!(matches!(
        s.replay_after("a", 1, 5).await,
        Err(ReplayError::UnknownEvent)
    ));
    assert!(matches!(
        s.replay_after("a", 2, 0).await,
        Err(ReplayError::UnknownStream)
    ));
    assert!(matches!(
        s.replay_after("b", 1, 0).await,
        Err(ReplayError::UnknownStream)
    ));
}
on_both!(replays_after_an_index_in_order);

async fn messages_are_kept_byte_for_byte(redis: Redis) {
    let s = redis.node("n", options()).await.event_store();
    let binary: Vec<u8> = (0..=255).collect();
    let spaced = Bytes::from_static(b"a b  c\n\r d");
    write(
        &s,
        &[
            append(1, 1, Bytes::from(binary.clone())),
            append(1, 2, Bytes::new()),
        ],
    )
    .await;
    write(&s, &[append(1, 3, spaced.clone())]).await;
    let events = s.replay_after("a", 1, 0).await.unwrap();
    assert_eq!(events[0].message, binary);
    assert_eq!(events[1].message, "");
    assert_eq!(events[2].message, spaced);
}
on_both!(messages_are_kept_byte_for_byte);

async fn the_session_cap_evicts_oldest_first_across_streams_and_reports_purged(redis: Redis) {
    let cap = 4 * (100 + OVERHEAD);
    let s = redis
        .node("n", options().max_bytes_per_session(cap))
        .await
        .event_store();
    // Streams 1 and 2 interleaved: the oldest go first, whichever their stream.
    write(&s, &[append(1, 1, msg(100)), append(2, 1, msg(100))]).await;
    write(&s, &[append(1, 2, msg(100)), append(2, 2, msg(100))]).await;
    write(&s, &[append(1, 3, msg(100)), append(2, 3, msg(100))]).await;
    assert_eq!(indices(&s, 1, 2).await, [3]);
    assert_eq!(indices(&s, 2, 1).await, [2, 3]);
    assert!(matches!(
        s.replay_after("a", 1, 0).await,
        Err(ReplayError::Purged)
    ));
    assert!(matches!(
        s.replay_after("a", 2, 0).await,
        Err(ReplayError::Purged)
    ));
    let events = options().max_events_per_session(3);
    let s = redis.node("m", events.prefix("e")).await.event_store();
    write(
        &s,
        &[
            append(1, 1, msg(1)),
            append(2, 1, msg(1)),
            append(3, 1, msg(1)),
        ],
    )
    .await;
    write(&s, &[append(3, 2, msg(1))]).await;
    assert!(matches!(
        s.replay_after("a", 1, 0).await,
        Err(ReplayError::Purged)
    ));
    assert_eq!(indices(&s, 3, 0).await, [1, 2]);
}
on_both!(the_session_cap_evicts_oldest_first_across_streams_and_reports_purged);

async fn a_finished_stream_is_kept_for_the_resume_window_only(redis: Redis) {
    let window = Duration::from_millis(300);
    let s = redis
        .node("n", options().resume_window(window))
        .await
        .event_store();
    write(
        &s,
        &[
            append(1, 1, msg(10)),
            append(1, 2, msg(10)),
            Write::Finish { stream: 1 },
        ],
    )
    .await;
    write(&s, &[append(2, 1, msg(10))]).await;
    assert_eq!(
        indices(&s, 1, 0).await,
        [1, 2],
        "resumable within the window"
    );
    tokio::time::sleep(window * 2).await;
    assert!(matches!(
        s.replay_after("a", 1, 0).await,
        Err(ReplayError::Purged)
    ));
    // The next write lets go of its bookkeeping too; the open stream is kept.
    write(&s, &[append(2, 2, msg(10))]).await;
    assert!(matches!(
        s.replay_after("a", 1, 0).await,
        Err(ReplayError::Purged)
    ));
    assert_eq!(indices(&s, 2, 0).await, [1, 2]);
    assert_eq!(redis.keys("t:{a}:1"), Vec::<String>::new());
}
on_both!(a_finished_stream_is_kept_for_the_resume_window_only);

async fn an_opened_stream_with_nothing_appended_replays_empty_after_its_priming_id(redis: Redis) {
    let s = redis.node("n", options()).await.event_store();
    write(&s, &[Write::Open { stream: 3 }]).await;
    assert!(s.replay_after("a", 3, 0).await.unwrap().is_empty());
    assert!(matches!(
        s.replay_after("a", 3, 1).await,
        Err(ReplayError::UnknownEvent)
    ));
}
on_both!(an_opened_stream_with_nothing_appended_replays_empty_after_its_priming_id);

/// A session of the node's, for the fenced calls.
async fn held(backend: &mcp_streamable_redis::RedisBackend, id: &str) -> Fence {
    let record = SessionRecord::new(id, Bytes::from_static(b"{}"), None);
    backend.cluster().start(&record).await.unwrap()
}

async fn streams_begun_and_not_finished_are_told_in_the_order_they_began(redis: Redis) {
    let node = redis.node("n", options()).await;
    let fence = held(&node, "a").await;
    let s = node.event_store();
    for (stream, id) in [(9, 1), (4, 2), (7, 3)] {
        let begun = s
            .begin("a", fence, stream, &[Id::from(id)], None)
            .await
            .unwrap();
        assert_eq!(begun, Begun::New);
    }
    s.write(
        "a",
        Some(fence),
        &[append(7, 1, msg(1)), Write::Finish { stream: 7 }],
    )
    .await
    .unwrap();
    assert_eq!(
        s.unfinished("a").await.unwrap(),
        [
            Unfinished::new(9, vec![Id::from(1)]),
            Unfinished::new(4, vec![Id::from(2)]),
        ]
    );
}
on_both!(streams_begun_and_not_finished_are_told_in_the_order_they_began);

async fn a_forward_begins_one_stream_however_often_it_is_sent(redis: Redis) {
    let node = redis.node("n", options()).await;
    let fence = held(&node, "a").await;
    let s = node.event_store();
    let ids = [Id::from(1)];
    assert_eq!(
        s.begin("a", fence, 5, &ids, Some("f1")).await.unwrap(),
        Begun::New
    );
    assert_eq!(
        s.begin("a", fence, 6, &ids, Some("f1")).await.unwrap(),
        Begun::Again { stream: 5 }
    );
    assert_eq!(
        s.begin("a", fence, 7, &ids, Some("f2")).await.unwrap(),
        Begun::New
    );
    let streams: Vec<u64> = s
        .unfinished("a")
        .await
        .unwrap()
        .iter()
        .map(|u| u.stream)
        .collect();
    assert_eq!(streams, [5, 7]);
}
on_both!(a_forward_begins_one_stream_however_often_it_is_sent);

async fn writes_under_another_fence_change_nothing(redis: Redis) {
    let node = redis.node("n", options()).await;
    let fence = held(&node, "a").await;
    let s = node.event_store();
    let stale = Fence::new(fence.incarnation, fence.generation + 1);
    let refused = s
        .write("a", Some(stale), &[append(1, 1, msg(1))])
        .await
        .unwrap_err();
    assert!(refused.downcast_ref::<NotHolder>().is_some(), "{refused}");
    let refused = s
        .begin("a", stale, 1, &[Id::from(1)], None)
        .await
        .unwrap_err();
    assert!(refused.downcast_ref::<NotHolder>().is_some(), "{refused}");
    assert!(matches!(
        s.replay_after("a", 1, 0).await,
        Err(ReplayError::UnknownStream)
    ));
    s.write("a", Some(fence), &[append(1, 1, msg(1))])
        .await
        .unwrap();
    assert_eq!(indices(&s, 1, 0).await, [1]);
}
on_both!(writes_under_another_fence_change_nothing);

async fn what_is_too_large_to_keep_is_never_dropped_silently(redis: Redis) {
    let cap = 1000;
    let s = redis
        .node("n", options().max_bytes_per_session(cap))
        .await
        .event_store();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{}"}}}}"#,
        "x".repeat(cap)
    );
    let note = format!(
        r#"{{"jsonrpc":"2.0","method":"n","params":{{"t":"{}"}}}}"#,
        "x".repeat(cap)
    );
    write(
        &s,
        &[append(1, 1, msg(10)), append(1, 2, Bytes::from(note))],
    )
    .await;
    write(&s, &[append(1, 3, msg(10)), append(1, 4, Bytes::from(big))]).await;
    // The notification left a gap: a replay from before it is purged, one after it is whole.
    assert!(matches!(
        s.replay_after("a", 1, 1).await,
        Err(ReplayError::Purged)
    ));
    let events = s.replay_after("a", 1, 2).await.unwrap();
    assert_eq!(events.iter().map(|e| e.index).collect::<Vec<_>>(), [3, 4]);
    // The response is kept as an error for its request.
    let Ok(Body::Single(Message::Response(response))) = mcp_jsonrpc::parse(&events[1].message)
    else {
        panic!("not a response: {:?}", events[1].message);
    };
    assert_eq!(response.id(), Some(&Id::from(7)));
    assert!(response.result().is_err());
}
on_both!(what_is_too_large_to_keep_is_never_dropped_silently);

async fn two_nodes_see_one_store(redis: Redis) {
    let a = redis.node("a", options()).await.event_store();
    let b = redis.node("b", options()).await.event_store();
    write(&a, &[append(1, 1, msg(3))]).await;
    assert_eq!(indices(&b, 1, 0).await, [1]);
}
on_both!(two_nodes_see_one_store);
