//! The `EventStore` contract, as the in-memory store's tests state it, on Redis.

use bytes::Bytes;
use mcp_jsonrpc::Id;
use mcp_streamable_redis::RedisEventStore;
use mcp_streamable_server::{EventStore, ReplayError, Unfinished};

use crate::support::{self, node, options, redis};

/// What the in-memory store charges per event on top of its bytes, as the Redis store does.
const OVERHEAD: usize = 64;

fn msg(n: usize) -> Bytes {
    Bytes::from(vec![b'x'; n])
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

async fn replay_len(
    store: &RedisEventStore,
    stream: u64,
    after: u64,
) -> Result<usize, ReplayError> {
    store
        .replay_after("a", stream, after)
        .await
        .map(|v| v.len())
}

#[tokio::test]
async fn replays_after_an_index_in_order() {
    let redis = redis();
    let s = node(&redis, "n", options()).await.event_store();
    for i in 0..5 {
        s.append("a", 1, i, Bytes::from(format!("m{i}")))
            .await
            .unwrap();
    }
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

#[tokio::test]
async fn messages_are_kept_byte_for_byte() {
    let redis = redis();
    let s = node(&redis, "n", options()).await.event_store();
    let binary: Vec<u8> = (0..=255).collect();
    s.append("a", 1, 1, Bytes::from(binary.clone()))
        .await
        .unwrap();
    s.append("a", 1, 2, Bytes::new()).await.unwrap();
    let events = s.replay_after("a", 1, 0).await.unwrap();
    assert_eq!(events[0].message, binary);
    assert_eq!(events[1].message, "");
}

#[tokio::test]
async fn the_session_cap_evicts_oldest_first_and_reports_purged() {
    let redis = redis();
    let cap = 3 * (100 + OVERHEAD);
    let s = node(&redis, "n", options().max_bytes_per_session(cap))
        .await
        .event_store();
    for i in 0..10 {
        s.append("a", 1, i, msg(100)).await.unwrap();
    }
    assert_eq!(indices(&s, 1, 6).await, [7, 8, 9]);
    assert!(matches!(
        s.replay_after("a", 1, 5).await,
        Err(ReplayError::Purged)
    ));
}

#[tokio::test]
async fn the_event_cap_counts_every_stream_of_the_session() {
    let redis = redis();
    let s = node(&redis, "n", options().max_events_per_session(4))
        .await
        .event_store();
    for i in 1..=3 {
        s.append("a", 1, i, msg(1)).await.unwrap();
        s.append("a", 2, i, msg(1)).await.unwrap();
    }
    // Kept: 1/2 2/2 1/3 2/3.
    assert_eq!(indices(&s, 1, 1).await, [2, 3]);
    assert!(matches!(
        s.replay_after("a", 1, 0).await,
        Err(ReplayError::Purged)
    ));
    assert_eq!(indices(&s, 2, 1).await, [2, 3]);
    assert!(matches!(
        s.replay_after("a", 2, 0).await,
        Err(ReplayError::Purged)
    ));
    // Another session is not charged for this one.
    s.append("b", 1, 1, msg(1)).await.unwrap();
    assert_eq!(indices(&s, 2, 1).await, [2, 3]);
}

#[tokio::test]
async fn closing_a_session_frees_it() {
    let redis = redis();
    let s = node(&redis, "n", options()).await.event_store();
    for i in 0..100 {
        s.append("a", 1, i, msg(1)).await.unwrap();
    }
    s.stream_opened("a", 2).await;
    let mut raw = support::raw(&redis).await;
    assert_eq!(
        support::keys(&mut raw, "t:*{a}").await,
        ["t:log:{a}", "t:meta:{a}"]
    );
    s.session_closed("a").await;
    assert!(support::keys(&mut raw, "t:*{a}").await.is_empty());
    assert!(matches!(
        s.replay_after("a", 1, 0).await,
        Err(ReplayError::UnknownStream)
    ));
}

#[tokio::test]
async fn a_long_session_of_many_streams_keeps_bookkeeping_for_what_it_keeps_only() {
    let redis = redis();
    let cap = 10 * (100 + OVERHEAD);
    let s = node(&redis, "n", options().max_bytes_per_session(cap))
        .await
        .event_store();
    for stream in 1..=1000 {
        s.append("a", stream, 1, msg(100)).await.unwrap();
        s.stream_finished("a", stream).await;
    }
    let mut raw = support::raw(&redis).await;
    let fields: usize = redis::cmd("HLEN")
        .arg("t:meta:{a}")
        .query_async(&mut raw)
        .await
        .unwrap();
    let kept: usize = redis::cmd("LLEN")
        .arg("t:log:{a}")
        .query_async(&mut raw)
        .await
        .unwrap();
    // `hi`, `bytes`, `seq`, and each kept finished stream's last index and mark.
    assert!(
        fields <= 3 + 2 * kept,
        "{fields} fields in the meta hash for {kept} events"
    );
    assert_eq!(kept, 10);
    assert!(matches!(replay_len(&s, 1000, 0).await, Ok(1)));
    assert!(matches!(
        s.replay_after("a", 5, 0).await,
        Err(ReplayError::Purged)
    ));
    assert!(matches!(
        s.replay_after("a", 1001, 0).await,
        Err(ReplayError::UnknownStream)
    ));
}

#[tokio::test]
async fn a_live_stream_read_to_its_end_resumes_though_its_events_were_evicted() {
    let redis = redis();
    let cap = 2 * (100 + OVERHEAD);
    let s = node(&redis, "n", options().max_bytes_per_session(cap))
        .await
        .event_store();
    s.append("a", 0, 1, msg(100)).await.unwrap();
    s.append("a", 0, 2, msg(100)).await.unwrap();
    for stream in 1..=10 {
        s.append("a", stream, 1, msg(100)).await.unwrap();
        s.stream_finished("a", stream).await;
    }
    assert!(matches!(replay_len(&s, 0, 2).await, Ok(0)));
    assert!(matches!(
        s.replay_after("a", 0, 1).await,
        Err(ReplayError::Purged)
    ));
    assert!(matches!(
        s.replay_after("a", 0, 3).await,
        Err(ReplayError::UnknownEvent)
    ));
}

#[tokio::test]
async fn a_finished_stream_is_replayed_from_what_is_kept_of_it() {
    let redis = redis();
    let cap = 3 * (100 + OVERHEAD);
    let s = node(&redis, "n", options().max_bytes_per_session(cap))
        .await
        .event_store();
    for i in 1..=5 {
        s.append("a", 7, i, msg(100)).await.unwrap();
    }
    s.stream_finished("a", 7).await;
    // Kept: 3, 4, 5.
    assert!(matches!(replay_len(&s, 7, 2).await, Ok(3)));
    assert!(matches!(replay_len(&s, 7, 4).await, Ok(1)));
    assert!(matches!(replay_len(&s, 7, 5).await, Ok(0)));
    assert!(matches!(
        replay_len(&s, 7, 1).await,
        Err(ReplayError::Purged)
    ));
    assert!(matches!(
        replay_len(&s, 7, 6).await,
        Err(ReplayError::UnknownEvent)
    ));
    assert!(matches!(
        replay_len(&s, 7, u64::MAX).await,
        Err(ReplayError::UnknownEvent)
    ));
    assert!(matches!(
        replay_len(&s, 8, 0).await,
        Err(ReplayError::UnknownStream)
    ));
}

#[tokio::test]
async fn an_opened_stream_with_nothing_appended_replays_empty_after_its_priming_id() {
    let redis = redis();
    let s = node(&redis, "n", options()).await.event_store();
    s.stream_opened("a", 3).await;
    assert!(matches!(replay_len(&s, 3, 0).await, Ok(0)));
    assert!(matches!(
        replay_len(&s, 3, 1).await,
        Err(ReplayError::UnknownEvent)
    ));
    assert_eq!(s.is_finished("a", 3).await.unwrap(), Some(false));
    s.stream_finished("a", 3).await;
    // Nothing was ever kept of it: as in memory, it is unknown once finished.
    assert!(matches!(
        replay_len(&s, 3, 0).await,
        Err(ReplayError::UnknownStream)
    ));
}

#[tokio::test]
async fn streams_begun_and_not_finished_are_told_in_the_order_they_began() {
    let redis = redis();
    let s = node(&redis, "n", options()).await.event_store();
    assert!(s.unfinished("a").await.unwrap().is_empty());
    s.stream_began("a", 5, &[Id::from(1)]).await.unwrap();
    s.stream_began("a", 2, &[Id::from("x"), Id::from(3)])
        .await
        .unwrap();
    s.stream_began("a", 9, &[Id::from(4)]).await.unwrap();
    s.append("a", 2, 1, msg(1)).await.unwrap();
    s.stream_finished("a", 9).await;
    assert_eq!(
        s.unfinished("a").await.unwrap(),
        [
            Unfinished::new(5, vec![Id::from(1)]),
            Unfinished::new(2, vec![Id::from("x"), Id::from(3)]),
        ]
    );
    // A began stream with nothing appended replays empty, not purged.
    assert!(matches!(replay_len(&s, 5, 0).await, Ok(0)));
    assert!(s.unfinished("b").await.unwrap().is_empty());
}

#[tokio::test]
async fn is_finished_tells_open_finished_and_unknown_streams_apart() {
    let redis = redis();
    let s = node(&redis, "n", options()).await.event_store();
    assert_eq!(s.is_finished("a", 1).await.unwrap(), None);
    s.stream_began("a", 1, &[Id::from(1)]).await.unwrap();
    assert_eq!(s.is_finished("a", 1).await.unwrap(), Some(false));
    s.append("a", 1, 1, msg(1)).await.unwrap();
    assert_eq!(s.is_finished("a", 1).await.unwrap(), Some(false));
    s.stream_finished("a", 1).await;
    assert_eq!(s.is_finished("a", 1).await.unwrap(), Some(true));
    assert_eq!(s.is_finished("a", 2).await.unwrap(), None);
}

#[tokio::test]
async fn two_nodes_see_one_store() {
    let redis = redis();
    let a = node(&redis, "a", options()).await.event_store();
    let b = node(&redis, "b", options()).await.event_store();
    a.stream_began("s", 1, &[Id::from(1)]).await.unwrap();
    a.append("s", 1, 1, msg(3)).await.unwrap();
    assert_eq!(b.replay_after("s", 1, 0).await.unwrap().len(), 1);
    assert_eq!(b.unfinished("s").await.unwrap().len(), 1);
    b.append("s", 1, 2, msg(3)).await.unwrap();
    b.stream_finished("s", 1).await;
    assert_eq!(a.is_finished("s", 1).await.unwrap(), Some(true));
    assert_eq!(a.replay_after("s", 1, 0).await.unwrap().len(), 2);
}

/// A follower reads an open stream from the end of the log back: it must get exactly the
/// events after its index, in order, however the stream's events are spread among others'.
#[tokio::test]
async fn an_open_stream_is_replayed_exactly_from_a_long_interleaved_log() {
    let redis = redis();
    let s = node(&redis, "n", options()).await.event_store();
    s.stream_opened("a", 1).await;
    for i in 1..=60 {
        s.append("a", 1, i, Bytes::from(format!("m{i}")))
            .await
            .unwrap();
        for other in 0..(i % 7) {
            s.append("a", 100 + other, i, msg(1)).await.unwrap();
        }
    }
    for after in 0..=60 {
        let events = s.replay_after("a", 1, after).await.unwrap();
        let expected: Vec<u64> = (after + 1..=60).collect();
        assert_eq!(events.iter().map(|e| e.index).collect::<Vec<_>>(), expected);
        for event in &events {
            assert_eq!(event.message, format!("m{}", event.index));
        }
    }
    // Stream 11 shares stream 1's digits: a prefix is not a match.
    s.append("a", 11, 61, msg(1)).await.unwrap();
    assert!(s.replay_after("a", 1, 60).await.unwrap().is_empty());
    assert_eq!(indices(&s, 11, 0).await, [61]);
}
