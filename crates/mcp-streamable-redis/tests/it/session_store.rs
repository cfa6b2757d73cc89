//! The `SessionStore` contract (`check_session_store`) on Redis and on a Redis Cluster, and
//! records Redis must carry whole.

use bytes::Bytes;
use mcp_streamable_server::{ProtocolVersion, SessionRecord, SessionStore, check_session_store};

use crate::support::{Redis, on_both, options};

/// What is created is loaded, touched, updated and removed, and unknown ids are no error.
async fn the_redis_store_keeps_the_contract(redis: Redis) {
    let store = redis.node("n", options()).await.session_store();
    check_session_store(&store).await;
}
on_both!(the_redis_store_keeps_the_contract);

async fn a_record_without_owner_and_with_a_binary_initialize_round_trips(redis: Redis) {
    let a = redis.node("a", options()).await.session_store();
    let b = redis.node("b", options()).await.session_store();
    let mut record = SessionRecord::new("s", Bytes::from(vec![0, 159, 146, 150, 255]), None);
    record.protocol_version = Some(ProtocolVersion::V2025_03_26);
    a.create(record.clone()).await.unwrap();
    assert_eq!(b.load("s").await.unwrap(), Some(record));
}
on_both!(a_record_without_owner_and_with_a_binary_initialize_round_trips);
