//! The nodes, as this node last read the membership: each one's incarnation, address, and until
//! when its lease is sure to be good; read with every renewal, and afresh before a takeover.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_streamable_server::Member;
use redis::Value;

/// One reading of the membership (`members.lua`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reading {
    /// Whether the renewal that read it found this node's lease good.
    pub(crate) renewed: bool,
    /// Redis's clock when it was read, in Unix milliseconds.
    pub(crate) now_ms: u64,
    /// Since when renewals have come without a break, by Redis's clock.
    pub(crate) up_since_ms: Option<u64>,
    /// Each node: its incarnation, address and the expiry of its lease, by Redis's clock.
    pub(crate) nodes: Vec<(String, u64, SocketAddr, u64)>,
}

impl Reading {
    pub(crate) fn parse(reply: Value) -> Option<Reading> {
        let Value::Array(items) = reply else {
            return None;
        };
        let mut items = items.into_iter();
        let int = |v: Option<Value>| match v? {
            Value::Int(n) => Some(n),
            _ => None,
        };
        let renewed = int(items.next())? == 1;
        let now_ms = u64::try_from(int(items.next())?).ok()?;
        let up_since_ms = u64::try_from(int(items.next())?).ok();
        let mut nodes = Vec::new();
        while let Some(name) = items.next() {
            let (Value::BulkString(name), Some(Value::BulkString(entry))) = (name, items.next())
            else {
                return None;
            };
            let name = String::from_utf8(name).ok()?;
            let entry = String::from_utf8(entry).ok()?;
            let mut fields = entry.split(' ');
            let incarnation = fields.next()?.parse().ok()?;
            let address = fields.next()?.parse().ok()?;
            let expires = fields.next()?.parse().ok()?;
            nodes.push((name, incarnation, address, expires));
        }
        Some(Reading {
            renewed,
            now_ms,
            up_since_ms,
            nodes,
        })
    }

    /// Node `name`, if its lease is good by this reading, with its lease's end by this
    /// process's clock (`read_at` being when the reading came).
    pub(crate) fn member(&self, name: &str, read_at: Instant) -> Option<Member> {
        let (_, incarnation, address, expires) = self.nodes.iter().find(|n| n.0 == name)?;
        let left = expires.checked_sub(self.now_ms)?;
        Some(Member::new(
            *incarnation,
            *address,
            read_at + Duration::from_millis(left),
        ))
    }

    /// How long no session may be taken over yet: the records came back (restarted, failed
    /// over, out of reach) less than a lease ago, and the live nodes have not all had a lease
    /// to renew.
    pub(crate) fn quiet_for(&self, lease: Duration) -> Option<Duration> {
        let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
        let since = self.up_since_ms.unwrap_or(self.now_ms);
        let up_for = self.now_ms.saturating_sub(since);
        (up_for < lease_ms).then(|| Duration::from_millis(lease_ms - up_for))
    }
}

/// The latest reading, as members this process can compare with its clock.
#[derive(Debug, Default)]
pub(crate) struct Members {
    members: Mutex<HashMap<String, Member>>,
}

impl Members {
    /// Takes `reading`, made at `read_at`, for the nodes as they are now.
    pub(crate) fn update(&self, reading: &Reading, read_at: Instant) {
        let members = reading
            .nodes
            .iter()
            .filter_map(|(name, ..)| Some((name.clone(), reading.member(name, read_at)?)))
            .collect();
        *self.members.lock().unwrap_or_else(PoisonError::into_inner) = members;
    }

    pub(crate) fn member(&self, name: &str) -> Option<Member> {
        self.members
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn a_reading_names_the_live_nodes_and_the_quiet_left() {
        let reply = Value::Array(vec![
            Value::Int(1),
            Value::Int(10_000),
            Value::Int(9_600),
            bulk("a"),
            bulk("7 127.0.0.1:7001 10500"),
            bulk("b"),
            bulk("9 127.0.0.1:7002 9000"),
        ]);
        let reading = Reading::parse(reply).unwrap();
        let at = Instant::now();
        let a = reading.member("a", at).unwrap();
        assert_eq!(
            (a.incarnation, a.until),
            (7, at + Duration::from_millis(500))
        );
        assert_eq!(reading.member("b", at), None, "its lease expired");
        assert_eq!(reading.member("c", at), None);
        let lease = Duration::from_millis(750);
        assert_eq!(reading.quiet_for(lease), Some(Duration::from_millis(350)));
        let settled = Reading {
            up_since_ms: Some(1_000),
            ..reading.clone()
        };
        assert_eq!(settled.quiet_for(lease), None);
        let restarted = Reading {
            up_since_ms: None,
            ..reading
        };
        assert_eq!(restarted.quiet_for(lease), Some(lease));
        let members = Members::default();
        members.update(&settled, at);
        assert_eq!(members.member("a").map(|m| m.incarnation), Some(7));
        assert_eq!(members.member("b"), None);
        assert_eq!(Reading::parse(Value::Nil), None);
    }
}
