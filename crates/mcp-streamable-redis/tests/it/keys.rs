//! What a session leaves in Redis: nothing once it ends, nothing past its expiry, its hash
//! and record alone once idle past the resume window; and what that costs.

use std::time::Duration;

use bytes::Bytes;
use mcp_jsonrpc::Id;
use mcp_streamable_redis::RedisBackend;
use mcp_streamable_server::{Cluster, EventStore, Fence, SessionRecord, SessionStore, Write};

use crate::support::{Redis, on_both, options};

/// A session as the server leaves it after `initialize`: its record and holder, its
/// `initialize` answer kept on a finished stream.
async fn start_session(backend: &RedisBackend, id: &str) -> Fence {
    let initialize = Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"load-client","version":"1.0.0"}}}"#,
    );
    let result = Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"echo","version":"0.1.0"}}}"#,
    );
    let record = SessionRecord::new(id, initialize, None);
    let fence = backend.cluster().start(&record).await.unwrap();
    let events = backend.event_store();
    events
        .begin(id, fence, 1, &[Id::from(0)], None)
        .await
        .unwrap();
    let writes = [
        Write::Append {
            stream: 1,
            index: 1,
            message: result,
        },
        Write::Finish { stream: 1 },
    ];
    events.write(id, Some(fence), &writes).await.unwrap();
    fence
}

async fn delete_leaves_no_key_of_the_session(redis: Redis) {
    let a = redis.node("a", options()).await;
    let fence = start_session(&a, "s").await;
    let events = a.event_store();
    events
        .begin("s", fence, 2, &[Id::from(1)], Some("f"))
        .await
        .unwrap();
    let append = Write::Append {
        stream: 2,
        index: 1,
        message: Bytes::from_static(b"{}"),
    };
    events.write("s", Some(fence), &[append]).await.unwrap();
    assert_eq!(
        redis.keys("t:{s}*"),
        // Stream 1's answer is kept inline, with its bookkeeping; stream 2's in its list.
        [
            "t:{s}",
            "t:{s}:2",
            "t:{s}:f",
            "t:{s}:q",
            "t:{s}:r",
            "t:{s}:w:f"
        ]
    );
    a.cluster().end("s", fence).await;
    assert_eq!(redis.keys("t:{s}*"), Vec::<String>::new());
}
on_both!(delete_leaves_no_key_of_the_session);

async fn every_key_of_a_session_expires_with_it(redis: Redis) {
    let expiry = Duration::from_millis(400);
    let a = redis
        .node(
            "a",
            options().session_expiry(expiry).resume_window(expiry * 2),
        )
        .await;
    let fence = start_session(&a, "s").await;
    a.session_store()
        .touch("s", Some(fence), std::time::SystemTime::now())
        .await
        .unwrap();
    assert!(!redis.keys("t:{s}*").is_empty());
    tokio::time::sleep(expiry * 3).await;
    assert_eq!(redis.keys("t:{s}*"), Vec::<String>::new());
}
on_both!(every_key_of_a_session_expires_with_it);

async fn two_prefixes_on_one_redis_do_not_see_each_other(redis: Redis) {
    let a = redis.node("a", options().prefix("one")).await;
    let b = redis.node("b", options().prefix("two")).await;
    start_session(&a, "s").await;
    assert!(a.session_store().load("s").await.unwrap().is_some());
    assert!(b.session_store().load("s").await.unwrap().is_none());
}
on_both!(two_prefixes_on_one_redis_do_not_see_each_other);

/// The issue's budget for an idle session in Redis, past the resume window.
const BUDGET: i64 = 1024;

fn used_memory(redis: &Redis) -> i64 {
    redis
        .cli(&["info", "memory"])
        .lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("used_memory in INFO memory")
}

/// An idle session past the resume window: its hash and record only, its finished stream gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_costs_redis_at_most_1_kib() {
    let redis = Redis::single();
    let window = Duration::from_millis(300);
    let a = redis.node("a", options().resume_window(window)).await;
    let sessions = 2000;
    let before = used_memory(&redis);
    for _ in 0..sessions {
        start_session(&a, &uuid::Uuid::new_v4().simple().to_string()).await;
    }
    tokio::time::sleep(window * 3).await;
    // Every key looked at once: Redis reclaims the expired ones it has not swept yet.
    let left = redis.keys("t:*").len();
    let per_session = (used_memory(&redis) - before) / sessions;
    assert_eq!(
        left as i64,
        2 * sessions + 3,
        "a hash and a record per session, and the membership's"
    );
    eprintln!("{per_session} bytes per idle session");
    assert!(
        per_session <= BUDGET,
        "{per_session} bytes per idle session"
    );
}
