//! The [`SessionStore`] on Redis: one hash per session.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use mcp_streamable_server::{
    ProtocolVersion, SessionRecord, SessionStore, StoreError, StoreFuture,
};

use crate::backend::RedisBackend;
use crate::error::{Error, Kind};
use crate::scripts;

/// The [`SessionStore`] of a [`RedisBackend`]: every node on the same Redis and prefix knows
/// every session.
///
/// A record lives for the [session expiry](crate::Options::session_expiry) after the last
/// [`touch`](SessionStore::touch), which also keeps the session's other keys (its holder and
/// its events) alive.
#[derive(Debug, Clone)]
pub struct RedisSessionStore {
    backend: RedisBackend,
}

impl RedisSessionStore {
    pub(crate) fn new(backend: RedisBackend) -> Self {
        RedisSessionStore { backend }
    }

    async fn create(&self, record: SessionRecord) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let key = shared.keys.record(&record.id);
        let mut fields: Vec<(&str, Vec<u8>)> = vec![
            ("initialize", record.initialize.to_vec()),
            ("active", time_to_field(record.last_active).into_bytes()),
        ];
        if let Some(owner) = &record.owner {
            fields.push(("owner", owner.as_bytes().to_vec()));
        }
        if let Some(version) = record.protocol_version {
            fields.push(("version", version.to_string().into_bytes()));
        }
        let mut pipe = redis::pipe();
        pipe.atomic()
            .del(&key)
            .hset_multiple(&key, &fields)
            .pexpire(&key, shared.options.key_ttl_ms() as i64);
        shared.pipe::<()>(&pipe).await
    }

    async fn load(&self, id: &str) -> Result<Option<SessionRecord>, Error> {
        let shared = &self.backend.shared;
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(shared.keys.record(id));
        let mut fields: HashMap<String, Vec<u8>> = shared.query(&cmd).await?;
        if fields.is_empty() {
            return Ok(None);
        }
        record_from_fields(id, &mut fields)
            .map(Some)
            .ok_or_else(|| Error::new(Kind::Malformed))
    }

    async fn touch(&self, id: &str, at: SystemTime) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let keys = &shared.keys;
        let mut call = scripts::TOUCH.prepare_invoke();
        call.key(keys.record(id))
            .key(keys.holder(id))
            .key(keys.log(id))
            .key(keys.meta(id))
            .arg(time_to_field(at))
            .arg(shared.options.key_ttl_ms());
        shared.script(&call).await.map(drop)
    }

    async fn set_version(&self, id: &str, version: ProtocolVersion) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let mut call = scripts::SET_VERSION.prepare_invoke();
        call.key(shared.keys.record(id)).arg(version.to_string());
        shared.script(&call).await.map(drop)
    }

    async fn remove(&self, id: &str) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let mut cmd = redis::cmd("DEL");
        cmd.arg(shared.keys.record(id));
        shared.query::<()>(&cmd).await
    }
}

/// The record of session `id` from its hash's fields.
fn record_from_fields(id: &str, fields: &mut HashMap<String, Vec<u8>>) -> Option<SessionRecord> {
    let initialize = Bytes::from(fields.remove("initialize")?);
    let owner = match fields.remove("owner") {
        Some(owner) => Some(String::from_utf8(owner).ok()?),
        None => None,
    };
    let mut record = SessionRecord::new(id, initialize, owner);
    record.last_active = time_from_field(std::str::from_utf8(fields.get("active")?).ok()?)?;
    record.protocol_version = match fields.get("version") {
        Some(version) => Some(std::str::from_utf8(version).ok()?.parse().ok()?),
        None => None,
    };
    Some(record)
}

/// A time as fixed-width digits (seconds, then nanoseconds, since the epoch), so that Lua
/// compares two as strings, exactly to the nanosecond.
fn time_to_field(at: SystemTime) -> String {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{:020}{:09}", since.as_secs(), since.subsec_nanos())
}

fn time_from_field(field: &str) -> Option<SystemTime> {
    if field.len() != 29 {
        return None;
    }
    let (secs, nanos) = field.split_at(20);
    let since = Duration::new(secs.parse().ok()?, nanos.parse().ok()?);
    SystemTime::UNIX_EPOCH.checked_add(since)
}

fn logged(result: Result<(), Error>) {
    if let Err(error) = result {
        tracing::warn!(%error, "redis session store: remove failed");
    }
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

    fn touch<'a>(&'a self, id: &'a str, at: SystemTime) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.touch(id, at).await?) })
    }

    fn set_version<'a>(
        &'a self,
        id: &'a str,
        version: ProtocolVersion,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.set_version(id, version).await?) })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move { logged(self.remove(id).await) })
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
    }

    #[test]
    fn a_record_without_its_initialize_is_malformed() {
        let mut fields = HashMap::from([(
            "active".to_owned(),
            time_to_field(SystemTime::now()).into_bytes(),
        )]);
        assert!(record_from_fields("s", &mut fields).is_none());
    }
}
