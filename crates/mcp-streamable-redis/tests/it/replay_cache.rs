//! DPoP's replay cache on Redis: a proof accepted through one node is refused through another,
//! until its time to live is over; a frozen Redis is an error (the guard's 503), not a yes, and
//! the proof whose answer did not come is spent.

use std::time::{Duration, Instant};

use mcp_streamable_auth::dpop::{ProofId, ReplayCache};

use crate::support::{Redis, on_both, options};

async fn a_proof_accepted_on_one_node_is_refused_on_another(redis: Redis) {
    let a = redis.node("a", options()).await.replay_cache();
    let b = redis.node("b", options()).await.replay_cache();
    let ttl = Duration::from_millis(300);
    let proof = ProofId::new("thumbprint", "jti-1");
    assert!(a.first_use(&proof, ttl).await.unwrap());
    assert!(!b.first_use(&proof, ttl).await.unwrap());
    assert!(!a.first_use(&proof, ttl).await.unwrap());
    // Another jti, or the same jti under another key, is another proof.
    assert!(
        b.first_use(&ProofId::new("thumbprint", "jti-2"), ttl)
            .await
            .unwrap()
    );
    assert!(
        b.first_use(&ProofId::new("other", "jti-1"), ttl)
            .await
            .unwrap()
    );
    // Past its time to live, nothing of it is kept.
    tokio::time::sleep(ttl + Duration::from_millis(100)).await;
    assert!(
        redis.keys("t:dpop:*").is_empty(),
        "{:?}",
        redis.keys("t:dpop:*")
    );
}
on_both!(a_proof_accepted_on_one_node_is_refused_on_another);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_frozen_a_proof_is_an_error_not_a_first_use() {
    let mut redis = Redis::single();
    let cache = redis
        .node("a", options().command_timeout(Duration::from_millis(300)))
        .await
        .replay_cache();
    let proof = ProofId::new("thumbprint", "jti-frozen");
    redis.server().freeze().unwrap();
    let started = Instant::now();
    let error = cache.first_use(&proof, Duration::from_secs(60)).await;
    let took = started.elapsed();
    redis.server().thaw().unwrap();
    assert!(error.is_err(), "{error:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Redis ran the command once thawed: the proof is spent, and a client's next try, with a
    // new proof as each try has, goes through.
    let again = cache.first_use(&proof, Duration::from_secs(60)).await;
    assert!(!again.unwrap());
    let next = ProofId::new("thumbprint", "jti-next");
    assert!(
        cache
            .first_use(&next, Duration::from_secs(60))
            .await
            .unwrap()
    );
}
