//! The `SessionStore` contract, as the in-memory store's test states it, on Redis.

use std::time::Duration;

use bytes::Bytes;
use mcp_streamable_server::{ProtocolVersion, SessionRecord, SessionStore};

use crate::support::{node, options, redis};

/// What is created is loaded, touched, updated and removed, and unknown ids are no error.
#[tokio::test]
async fn the_redis_store_keeps_the_contract() {
    let redis = redis();
    let store = node(&redis, "n", options()).await.session_store();
    let record = SessionRecord::new("s1", Bytes::from_static(b"{}"), Some("alice".into()));
    store.create(record.clone()).await.unwrap();
    assert_eq!(store.load("s1").await.unwrap(), Some(record.clone()));
    assert_eq!(store.load("s2").await.unwrap(), None);
    let later = record.last_active + Duration::from_secs(5);
    store.touch("s1", later).await.unwrap();
    // Touches out of order never move the time back.
    store.touch("s1", record.last_active).await.unwrap();
    store
        .set_version("s1", ProtocolVersion::V2025_11_25)
        .await
        .unwrap();
    let loaded = store.load("s1").await.unwrap().unwrap();
    assert_eq!(loaded.last_active, later);
    assert_eq!(loaded.protocol_version, Some(ProtocolVersion::V2025_11_25));
    store.touch("nobody", later).await.unwrap();
    store
        .set_version("nobody", ProtocolVersion::V2025_06_18)
        .await
        .unwrap();
    assert_eq!(store.load("nobody").await.unwrap(), None);
    store.remove("s1").await;
    store.remove("s1").await;
    assert_eq!(store.load("s1").await.unwrap(), None);
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
