//! The rate store: a client's quota holds across the nodes, a request over one of its buckets
//! is charged to none, and a frozen Redis fails the charge within the command timeout (the
//! server then lets the request through).

use std::time::{Duration, Instant};

use mcp_streamable_server::{Bucket, Quota, RateStore};

use crate::support::{Redis, on_both, options};

async fn a_clients_quota_holds_across_the_nodes(redis: Redis) {
    let a = redis.node("a", options()).await.rate_store();
    let b = redis.node("b", options()).await.rate_store();
    let quota = Quota::per_minute(60).burst(4);
    let all = |client| [Bucket::new(client, "*", quota, 1)];
    for store in [&a, &b, &a, &b] {
        assert_eq!(store.charge(&all("ip 10.0.0.1")).await.unwrap(), None);
    }
    let wait = b.charge(&all("ip 10.0.0.1")).await.unwrap().unwrap();
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_secs(1),
        "{wait:?}"
    );
    assert!(a.charge(&all("ip 10.0.0.1")).await.unwrap().is_some());
    // Another client, braces and all, has buckets of its own.
    assert_eq!(a.charge(&all("owner {x}")).await.unwrap(), None);

    // Over its method's bucket, a request is charged to none of its buckets.
    let calls = Quota::per_minute(1);
    let both = [
        Bucket::new("owner c", "*", quota, 1),
        Bucket::new("owner c", "tools/call", calls, 1),
    ];
    assert_eq!(a.charge(&both).await.unwrap(), None);
    assert!(b.charge(&both).await.unwrap().is_some());
    for _ in 0..3 {
        assert_eq!(
            b.charge(&both[..1]).await.unwrap(),
            None,
            "the refused call took room"
        );
    }
    assert!(a.charge(&both[..1]).await.unwrap().is_some());
    // A bucket lives until it has refilled, no longer.
    let ttl = redis.cli(&["PTTL", "t:rl:{owner c}:tools/call"]);
    let ttl: i64 = ttl.trim().parse().unwrap();
    assert!(ttl > 0 && ttl <= 60_001, "{ttl}");
}
on_both!(a_clients_quota_holds_across_the_nodes);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_frozen_a_charge_fails_within_the_command_timeout() {
    let mut redis = Redis::single();
    let timeout = Duration::from_millis(300);
    let store = redis
        .node("a", options().command_timeout(timeout))
        .await
        .rate_store();
    let quota = Quota::per_second(10);
    let bucket = [Bucket::new("ip 10.0.0.2", "*", quota, 1)];
    redis.server().freeze().unwrap();
    let started = Instant::now();
    let error = store.charge(&bucket).await.unwrap_err();
    let took = started.elapsed();
    redis.server().thaw().unwrap();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(error.to_string().contains("rate store failed"), "{error}");
    assert_eq!(store.charge(&bucket).await.unwrap(), None);
}
