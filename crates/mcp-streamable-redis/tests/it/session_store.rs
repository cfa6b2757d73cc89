//! The `SessionStore` contract (`check_session_store`) on Redis, and records Redis must carry whole.

use bytes::Bytes;
use mcp_streamable_server::{ProtocolVersion, SessionRecord, SessionStore, check_session_store};

use crate::support::{node, options, redis};

/// What is created is loaded, touched, updated and removed, and unknown ids are no error.
#[tokio::test]
async fn the_redis_store_keeps_the_contract() {
    let redis = redis();
    let store = node(&redis, "n", options()).await.session_store();
    check_session_store(&store).await;
}

#[tokio::test]
async fn a_record_without_owner_and_with_a_binary_initialize_round_trips() {
    let redis = redis();
    let a = node(&redis, "a", options()).await.session_store();
    let b = node(&redis, "b", options()).await.session_store();
    let mut record = SessionRecord::new("s", Bytes::from(vec![0, 159, 146, 150, 255]), None);
    record.protocol_version = Some(ProtocolVersion::V2025_03_26);
    a.create(record.clone()).await.unwrap();
    assert_eq!(b.load("s").await.unwrap(), Some(record));
}
