//! What an idle session costs Redis, from Redis's own memory figures.

use bytes::Bytes;
use mcp_jsonrpc::Id;
use mcp_streamable_server::{Cluster, EventStore, SessionRecord, SessionStore};

use crate::support::{node, options, raw, redis};

/// The issue's budget for an idle session in Redis.
const BUDGET: i64 = 2048;

async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("used_memory in INFO memory")
}

/// A session as the server leaves it idle: its record, its holder, and its `initialize`
/// answer kept on a finished stream. Its log is a list: as a Redis stream (4 KiB up front
/// in Redis 7) it cost 5.4 KiB.
#[tokio::test]
async fn an_idle_session_costs_redis_at_most_2_kib() {
    let redis = redis();
    let a = node(&redis, "a", options()).await;
    let mut conn = raw(&redis).await;
    let initialize = Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"load-client","version":"1.0.0"}}}"#,
    );
    let result = Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"echo","version":"0.1.0"}}}"#,
    );
    let sessions = 2000;
    let before = used_memory(&mut conn).await;
    for _ in 0..sessions {
        let id = uuid::Uuid::new_v4().to_string();
        let record = SessionRecord::new(id.clone(), initialize.clone(), None);
        a.session_store().create(record).await.unwrap();
        a.cluster().hold(&id).await.unwrap();
        let events = a.event_store();
        events.stream_began(&id, 1, &[Id::from(0)]).await.unwrap();
        events.append(&id, 1, 1, result.clone()).await.unwrap();
        events.stream_finished(&id, 1).await;
    }
    let per_session = (used_memory(&mut conn).await - before) / sessions;
    assert!(
        per_session <= BUDGET,
        "{per_session} bytes per idle session"
    );
}
