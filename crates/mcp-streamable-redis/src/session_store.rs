//! The [`SessionStore`] on Redis: the record a string of its own (`P:{S}:r`), its activity
//! and version in the session's hash.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use mcp_streamable_server::{
    Fence, ProtocolVersion, SessionRecord, SessionStore, StoreError, StoreFuture,
};

use crate::error::{Error, Kind};

use crate::lease::Keeper;
use crate::node::{Node, fence_args, fenced};
use crate::scripts::{self, Call};

/// The [`SessionStore`] of a [`RedisBackend`](crate::RedisBackend): every node on the same
/// Redis and prefix knows every session.
///
/// A record lives a quarter past the [session expiry](crate::Options::session_expiry) after
/// the last [`touch`](SessionStore::touch), which also keeps the session's open streams alive.
#[derive(Debug, Clone)]
pub struct RedisSessionStore {
    node: Arc<Node>,
    _keeper: Arc<Keeper>,
}

impl RedisSessionStore {
    pub(crate) fn new(node: Arc<Node>, keeper: Arc<Keeper>) -> Self {
        RedisSessionStore {
            node,
            _keeper: keeper,
        }
    }

    async fn create(&self, record: SessionRecord) -> Result<(), Error> {
        let node = &self.node;
        let mut call = Call::new(
            &scripts::CREATE,
            &[node.keys.session(&record.id), node.keys.record(&record.id)],
        );
        call.arg(encode_record(&record))
            .arg(time_to_field(record.last_active))
            .arg(
                record
                    .protocol_version
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
            )
            .arg(node.options.key_ttl_ms());
        node.script(&call).await.map(drop)
    }

    async fn load(&self, id: &str) -> Result<Option<SessionRecord>, Error> {
        let node = &self.node;
        let call = Call::new(
            &scripts::LOAD,
            &[node.keys.session(id), node.keys.record(id)],
        );
        let reply = node.script(&call).await?;
        let fields: Vec<Option<Vec<u8>>> =
            redis::FromRedisValue::from_redis_value(reply).map_err(|e| Error::redis(e.into()))?;
        if fields.is_empty() {
            return Ok(None);
        }
        record_from_fields(id, fields)
            .map(Some)
            .ok_or_else(|| Error::new(Kind::Malformed))
    }

    async fn touch(&self, id: &str, fence: Option<Fence>, at: SystemTime) -> Result<(), Error> {
        let node = &self.node;
        let mut call = Call::new(
            &scripts::TOUCH,
            &[node.keys.session(id), node.keys.record(id)],
        );
        fence_args(&mut call, &node.options.node, fence);
        call.arg(time_to_field(at)).arg(node.options.key_ttl_ms());
        fenced(&node.script(&call).await?)
    }

    async fn set_version(
        &self,
        id: &str,
        fence: Option<Fence>,
        version: ProtocolVersion,
    ) -> Result<(), Error> {
        let node = &self.node;
        let mut call = Call::new(&scripts::SET_VERSION, &[node.keys.session(id)]);
        fence_args(&mut call, &node.options.node, fence);
        call.arg(version.to_string());
        fenced(&node.script(&call).await?)
    }

    async fn remove(&self, id: &str) -> Result<(), Error> {
        let node = &self.node;
        node.end(id, None).await
    }
}

/// The large part of a record, one string: `"<owner length> <owner><initialize>"`, the length
/// 0 for no owner (an empty owner is one of length 0 too: none).
pub(crate) fn encode_record(record: &SessionRecord) -> Vec<u8> {
    let owner = record.owner.as_deref().unwrap_or("");
    let mut out = format!("{} {owner}", owner.len()).into_bytes();
    out.extend_from_slice(&record.initialize);
    out
}

/// The owner and the `initialize` of [`encode_record`]'s string.
fn decode_record(encoded: &[u8]) -> Option<(Option<String>, Bytes)> {
    let space = encoded.iter().position(|b| *b == b' ')?;
    let len: usize = std::str::from_utf8(&encoded[..space]).ok()?.parse().ok()?;
    let rest = encoded.get(space + 1..)?;
    let owner = std::str::from_utf8(rest.get(..len)?).ok()?.to_owned();
    let initialize = Bytes::copy_from_slice(rest.get(len..)?);
    Some(((!owner.is_empty()).then_some(owner), initialize))
}

/// The record of session `id` from `load.lua`'s answer: the record string, active, version.
fn record_from_fields(id: &str, fields: Vec<Option<Vec<u8>>>) -> Option<SessionRecord> {
    let mut fields = fields.into_iter();
    let (owner, initialize) = decode_record(&fields.next()??)?;
    let active = fields.next()??;
    let version = fields.next()?;
    let mut record = SessionRecord::new(id, initialize, owner);
    record.last_active = time_from_field(std::str::from_utf8(&active).ok()?)?;
    record.protocol_version = match version {
        Some(version) => Some(std::str::from_utf8(&version).ok()?.parse().ok()?),
        None => None,
    };
    Some(record)
}

/// A time as fixed-width digits (seconds, then nanoseconds, since the epoch), so that Lua
/// compares two as strings, exactly to the nanosecond.
pub(crate) fn time_to_field(at: SystemTime) -> String {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    // Zero-padded by hand, not with `format!("{:020}{:09}")`: `begin` writes one per request.
    let mut field = String::with_capacity(29);
    for (number, width) in [(since.as_secs(), 20), (u64::from(since.subsec_nanos()), 9)] {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(number);
        field.extend(std::iter::repeat_n('0', width - digits.len()));
        field.push_str(digits);
    }
    field
}

fn time_from_field(field: &str) -> Option<SystemTime> {
    if field.len() != 29 {
        return None;
    }
    let (secs, nanos) = field.split_at(20);
    let since = Duration::new(secs.parse().ok()?, nanos.parse().ok()?);
    SystemTime::UNIX_EPOCH.checked_add(since)
}

impl SessionStore for RedisSessionStore {
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.create(record).await?) })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(async move { Ok(self.load(id).await?) })
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.touch(id, fence, at).await.map_err(Error::into_store) })
    }

    fn set_version<'a>(
        &'a self,
        id: &'a str,
        fence: Option<Fence>,
        version: ProtocolVersion,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.set_version(id, fence, version)
                .await
                .map_err(Error::into_store)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if let Err(error) = self.remove(id).await {
                tracing::warn!(%error, session_id = id, "redis session store: remove failed");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_to_the_nanosecond_and_compare_as_strings() {
        let now = SystemTime::now();
        assert_eq!(time_from_field(&time_to_field(now)), Some(now));
        let later = now + Duration::from_nanos(1);
        assert!(time_to_field(later) > time_to_field(now));
        let much_later = now + Duration::from_secs(1_000_000_000);
        assert!(time_to_field(much_later) > time_to_field(later));
        assert_eq!(time_from_field("12"), None);
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 5);
        assert_eq!(time_to_field(at), "00000000001700000000000000005");
        assert_eq!(time_to_field(SystemTime::UNIX_EPOCH), "0".repeat(29));
    }

    #[test]
    fn records_round_trip_whatever_their_owner() {
        for owner in [
            None,
            Some("iss sub client".to_owned()),
            Some("ünï 3".to_owned()),
        ] {
            let record = SessionRecord::new("s", Bytes::from_static(b"{\"a\": 1} 2"), owner);
            let (owner, initialize) = decode_record(&encode_record(&record)).unwrap();
            assert_eq!((owner, initialize), (record.owner, record.initialize));
        }
        assert!(decode_record(b"9 short").is_none());
        assert!(decode_record(b"x y").is_none());
    }

    #[test]
    fn a_record_without_its_initialize_is_malformed() {
        let active = time_to_field(SystemTime::now()).into_bytes();
        assert!(record_from_fields("s", vec![None, Some(active), None, None]).is_none());
    }
}
