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

/// Scripts Redis forgot (`SCRIPT FLUSH`; a restart, or a failover to a replica that never ran
/// them) are loaded again by the call that finds one missing, and the call goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_redis_forgot_are_loaded_again() {
    let redis = Redis::single();
    let s = redis.node("n", options()).await.event_store();
    write(&s, &[append(1, 1, msg(3))]).await;
    assert_eq!(redis.cli(&["SCRIPT", "FLUSH"]).trim(), "OK");
    write(&s, &[append(1, 2, msg(3))]).await;
    assert_eq!(indices(&s, 1, 0).await, [1, 2]);
}

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

/// A stream's events come back alike whether they were written before its end (kept in its
/// list) or in the batch that ended it (kept inline, with its bookkeeping).
async fn a_finished_stream_replays_alike_however_its_events_came(redis: Redis) {
    let s = redis.node("n", options()).await.event_store();
    let binary: Bytes = (0..=255).collect::<Vec<u8>>().into();
    let spaced = Bytes::from_static(b"a b  c\n\r d 7 9 ");
    let events = [binary, Bytes::new(), spaced, Bytes::from_static(b"x")];
    let appends = |stream: u64| -> Vec<Write> {
        (1..)
            .zip(events.iter().cloned())
            .map(|(index, message)| append(stream, index, message))
            .collect()
    };
    // Stream 1 in one batch with its end; stream 2's events first, its end after.
    let mut one = appends(1);
    one.push(Write::Finish { stream: 1 });
    write(&s, &one).await;
    write(&s, &appends(2)).await;
    write(&s, &[Write::Finish { stream: 2 }]).await;
    for stream in [1, 2] {
        for after in 0..=4 {
            let replayed = s.replay_after("a", stream, after).await.unwrap();
            let want: Vec<(u64, Bytes)> = (1..)
                .zip(events.iter().cloned())
                .skip(after as usize)
                .collect();
            let got: Vec<(u64, Bytes)> =
                replayed.into_iter().map(|e| (e.index, e.message)).collect();
            assert_eq!(got, want, "stream {stream} after {after}");
        }
        assert!(matches!(
            s.replay_after("a", stream, 5).await,
            Err(ReplayError::UnknownEvent)
        ));
    }
}
on_both!(a_finished_stream_replays_alike_however_its_events_came);

async fn the_session_cap_evicts_the_open_streams_oldest_first_and_reports_purged(redis: Redis) {
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
on_both!(the_session_cap_evicts_the_open_streams_oldest_first_and_reports_purged);

async fn over_a_cap_finished_streams_go_first_the_oldest_finished_first(redis: Redis) {
    // An open stream with one event, three finished ones with one each (charged a
    // bookkeeping's overhead more): 164 + 3 × 228 = 848 bytes.
    let cap = 900;
    let s = redis
        .node("n", options().max_bytes_per_session(cap))
        .await
        .event_store();
    write(&s, &[append(1, 1, msg(100))]).await;
    for stream in [3, 2, 4] {
        write(&s, &[append(stream, 1, msg(100)), Write::Finish { stream }]).await;
    }
    // One more event on the open stream: the stream that finished first goes, whole.
    write(&s, &[append(1, 2, msg(100))]).await;
    assert!(matches!(
        s.replay_after("a", 3, 0).await,
        Err(ReplayError::Purged)
    ));
    assert_eq!(indices(&s, 2, 0).await, [1]);
    assert_eq!(indices(&s, 4, 0).await, [1]);
    assert_eq!(
        indices(&s, 1, 0).await,
        [1, 2],
        "the open stream keeps it all"
    );
    assert_eq!(redis.keys("t:{a}:3"), Vec::<String>::new());
}
on_both!(over_a_cap_finished_streams_go_first_the_oldest_finished_first);

/// The commands Redis ran since the last `CONFIG RESETSTAT`, scripts' own included.
fn commands_run(redis: &Redis) -> u64 {
    redis
        .cli(&["info", "commandstats"])
        .lines()
        .filter(|line| !line.starts_with("cmdstat_info") && !line.starts_with("cmdstat_config"))
        .filter_map(|line| {
            line.split_once("calls=")?
                .1
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// A request as the server makes it: its stream begun, its answer written, the stream
/// finished; the commands Redis ran for it.
async fn request_cost(redis: &Redis, s: &RedisEventStore, fence: Fence, stream: u64) -> u64 {
    redis.cli(&["config", "resetstat"]);
    s.begin("a", fence, stream, &[Id::from(stream as i64)], None)
        .await
        .unwrap();
    let writes = [append(stream, 1, msg(100)), Write::Finish { stream }];
    s.write("a", Some(fence), &writes).await.unwrap();
    commands_run(redis)
}

/// What a request costs Redis does not grow with what the session keeps: thousands of
/// finished streams in the resume window (and as many forwards remembered) cost a request no
/// more commands than a new session's first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_costs_redis_the_same_however_many_streams_its_session_keeps() {
    let redis = Redis::single();
    let node = redis.node("n", options()).await;
    let fence = held(&node, "a").await;
    let s = node.event_store();
    let first = request_cost(&redis, &s, fence, 1).await;
    for stream in 2..2000 {
        let forward = format!("f{stream}");
        s.begin(
            "a",
            fence,
            stream,
            &[Id::from(stream as i64)],
            Some(&forward),
        )
        .await
        .unwrap();
        let writes = [append(stream, 1, msg(100)), Write::Finish { stream }];
        s.write("a", Some(fence), &writes).await.unwrap();
    }
    let later = request_cost(&redis, &s, fence, 2000).await;
    assert!(
        later <= first + 8,
        "a request ran {later} commands in Redis with 2,000 streams kept, {first} with none"
    );
}

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

/// A finished stream whose events are gone from Redis before its bookkeeping (its list expired
/// at the window's edge, by Redis's clock, while the reader's clock still had it inside) is
/// purged for a replay, never an empty success that would leave its client waiting.
async fn a_finished_stream_whose_events_are_gone_is_purged_not_empty(redis: Redis) {
    let s = redis.node("n", options()).await.event_store();
    write(&s, &[append(1, 1, msg(10)), append(1, 2, msg(10))]).await;
    write(&s, &[Write::Finish { stream: 1 }]).await;
    assert_eq!(indices(&s, 1, 0).await, [1, 2]);
    redis.cli(&["del", "t:{a}:1"]);
    assert!(matches!(
        s.replay_after("a", 1, 0).await,
        Err(ReplayError::Purged)
    ));
    assert!(s.replay_after("a", 1, 2).await.unwrap().is_empty());
}
on_both!(a_finished_stream_whose_events_are_gone_is_purged_not_empty);

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

/// Over a cap, a session lets go of what puts it over and more, down to a sixteenth under
/// the cap, so that the next writes have room: it keeps 30 events of 32 then, and lets go of
/// none again until it is over once more.
async fn over_a_cap_a_session_keeps_a_sixteenth_under_it(redis: Redis) {
    let s = redis
        .node("n", options().max_events_per_session(32))
        .await
        .event_store();
    for index in 1..=33 {
        write(&s, &[append(1, index, msg(10))]).await;
    }
    assert_eq!(indices(&s, 1, 3).await, (4..=33).collect::<Vec<_>>());
    assert!(matches!(
        s.replay_after("a", 1, 2).await,
        Err(ReplayError::Purged)
    ));
    for index in 34..=35 {
        write(&s, &[append(1, index, msg(10))]).await;
    }
    assert_eq!(indices(&s, 1, 3).await, (4..=35).collect::<Vec<_>>());
    write(&s, &[append(1, 36, msg(10))]).await;
    assert_eq!(indices(&s, 1, 6).await, (7..=36).collect::<Vec<_>>());
    // Finished streams go first, whole, down to the same mark: 24 events in an open stream,
    // four finished streams of two each (32 events) and one more event: the two that finished
    // first go (a sixteenth under is 30, and each stream counts as two).
    let s = redis
        .node("m", options().max_events_per_session(32).prefix("e"))
        .await
        .event_store();
    let open: Vec<Write> = (1..=24).map(|i| append(1, i, msg(1))).collect();
    write(&s, &open).await;
    for stream in 2..=5 {
        let finished = [
            append(stream, 1, msg(1)),
            append(stream, 2, msg(1)),
            Write::Finish { stream },
        ];
        write(&s, &finished).await;
    }
    write(&s, &[append(1, 25, msg(1))]).await;
    for stream in [2, 3] {
        assert!(matches!(
            s.replay_after("a", stream, 0).await,
            Err(ReplayError::Purged)
        ));
    }
    for stream in [4, 5] {
        assert_eq!(indices(&s, stream, 0).await, [1, 2]);
    }
    assert_eq!(indices(&s, 1, 0).await, (1..=25).collect::<Vec<_>>());
}
on_both!(over_a_cap_a_session_keeps_a_sixteenth_under_it);

/// The lifetime of a key, in ms (negative: none, or no key).
fn pttl(redis: &Redis, key: &str) -> i64 {
    redis.cli(&["PTTL", key]).trim().parse().unwrap()
}

/// A session's keys live a ninth longer than asked and are renewed an eighth of that at a
/// time, not with every write; its open streams' lists with each write to them; its finished
/// streams a ninth longer than the window, renewed an eighth of it at a time too.
async fn lifetimes_are_renewed_an_eighth_at_a_time(redis: Redis) {
    // Keys live 10 s (the expiry and a quarter), so 11.25 s, renewed past 1.25 s; finished
    // streams 9 s, renewed past 1 s.
    let node = redis
        .node(
            "n",
            options()
                .session_expiry(Duration::from_secs(8))
                .resume_window(Duration::from_secs(8)),
        )
        .await;
    let fence = held(&node, "a").await;
    let s = node.event_store();
    let write = |writes: Vec<Write>| {
        let s = s.clone();
        async move { s.write("a", Some(fence), &writes).await.unwrap() }
    };
    let ttl = |key: &str| pttl(&redis, key);
    let started = std::time::Instant::now();
    write(vec![
        append(1, 1, msg(10)),
        append(2, 1, msg(10)),
        Write::Finish { stream: 2 },
    ])
    .await;
    let (session, record, finished, queue, list) =
        ("t:{a}", "t:{a}:r", "t:{a}:f", "t:{a}:q", "t:{a}:1");
    for key in [session, record] {
        assert!((10_500..=11_250).contains(&ttl(key)), "{key}");
    }
    for key in [finished, queue] {
        assert!((8_300..=9_000).contains(&ttl(key)), "{key}");
    }
    assert!((9_300..=10_000).contains(&ttl(list)));
    tokio::time::sleep(Duration::from_millis(600)).await;
    write(vec![
        append(1, 2, msg(10)),
        append(3, 1, msg(10)),
        Write::Finish { stream: 3 },
    ])
    .await;
    // (On a machine too slow to have written twice within an eighth, there is nothing to tell.)
    if started.elapsed() < Duration::from_millis(950) {
        for key in [session, record] {
            assert!(ttl(key) <= 10_750, "{key} renewed before an eighth");
        }
        for key in [finished, queue] {
            assert!(ttl(key) <= 8_500, "{key} renewed before an eighth");
        }
    }
    assert!(ttl(list) >= 9_600, "the list lives on with each write");
    tokio::time::sleep(Duration::from_millis(1_400).saturating_sub(started.elapsed())).await;
    write(vec![
        append(1, 3, msg(10)),
        append(4, 1, msg(10)),
        Write::Finish { stream: 4 },
    ])
    .await;
    for key in [session, record] {
        assert!(ttl(key) >= 10_800, "{key} not renewed past an eighth");
    }
    for key in [finished, queue] {
        assert!(ttl(key) >= 8_600, "{key} not renewed past an eighth");
    }
}
on_both!(lifetimes_are_renewed_an_eighth_at_a_time);

/// A write to a stream after its end in the same batch (no sender makes one) changes nothing
/// of it.
async fn a_write_after_a_streams_end_in_its_batch_changes_nothing(redis: Redis) {
    let s = redis.node("n", options()).await.event_store();
    write(
        &s,
        &[
            append(1, 1, msg(3)),
            Write::Finish { stream: 1 },
            append(1, 2, msg(3)),
            Write::Open { stream: 1 },
        ],
    )
    .await;
    assert_eq!(indices(&s, 1, 0).await, [1]);
    assert!(matches!(
        s.replay_after("a", 1, 2).await,
        Err(ReplayError::UnknownEvent)
    ));
    assert!(s.unfinished("a").await.unwrap().is_empty());
    assert_eq!(redis.keys("t:{a}:1"), Vec::<String>::new());
}
on_both!(a_write_after_a_streams_end_in_its_batch_changes_nothing);

/// A stream begun twice (a begin tried again after its answer was lost) is one stream again
/// after the next write, with what it was first begun for.
async fn a_stream_begun_twice_is_one_stream_after_a_write(redis: Redis) {
    let node = redis.node("n", options()).await;
    let fence = held(&node, "a").await;
    let s = node.event_store();
    for (stream, id) in [(4, 1), (5, 2), (4, 3)] {
        s.begin("a", fence, stream, &[Id::from(id)], None)
            .await
            .unwrap();
    }
    s.write("a", Some(fence), &[append(5, 1, msg(1))])
        .await
        .unwrap();
    assert_eq!(
        s.unfinished("a").await.unwrap(),
        [
            Unfinished::new(4, vec![Id::from(1)]),
            Unfinished::new(5, vec![Id::from(2)]),
        ]
    );
    s.write(
        "a",
        Some(fence),
        &[append(4, 1, msg(1)), Write::Finish { stream: 4 }],
    )
    .await
    .unwrap();
    assert_eq!(
        s.unfinished("a").await.unwrap(),
        [Unfinished::new(5, vec![Id::from(2)])]
    );
    assert_eq!(indices(&s, 4, 0).await, [1]);
}
on_both!(a_stream_begun_twice_is_one_stream_after_a_write);

/// Past the window, every finished stream it holds goes at the next write, however many, their
/// lists too; those finished since stay.
async fn finished_streams_past_the_window_go_however_many(redis: Redis) {
    let window = Duration::from_secs(1);
    let s = redis
        .node("n", options().resume_window(window))
        .await
        .event_store();
    let started = std::time::Instant::now();
    for stream in 1..=6 {
        if stream % 2 == 0 {
            // Its event in its list, written before its end.
            write(&s, &[append(stream, 1, msg(10))]).await;
            write(&s, &[Write::Finish { stream }]).await;
        } else {
            write(&s, &[append(stream, 1, msg(10)), Write::Finish { stream }]).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    for stream in 7..=8 {
        write(&s, &[append(stream, 1, msg(10)), Write::Finish { stream }]).await;
    }
    tokio::time::sleep(Duration::from_millis(1_250).saturating_sub(started.elapsed())).await;
    let before = started.elapsed();
    write(&s, &[append(9, 1, msg(10))]).await;
    for stream in 1..=6 {
        assert!(
            matches!(
                s.replay_after("a", stream, 0).await,
                Err(ReplayError::Purged)
            ),
            "stream {stream}"
        );
        assert_eq!(
            redis.keys(&format!("t:{{a}}:{stream}")),
            Vec::<String>::new()
        );
    }
    // (Unless the machine was too slow to write before they too were past the window.)
    if before < Duration::from_millis(1_500) {
        for stream in 7..=8 {
            assert_eq!(indices(&s, stream, 0).await, [1]);
        }
        assert_eq!(redis.cli(&["HLEN", "t:{a}:f"]).trim(), "2");
        assert_eq!(redis.cli(&["LLEN", "t:{a}:q"]).trim(), "2");
    }
}
on_both!(finished_streams_past_the_window_go_however_many);
