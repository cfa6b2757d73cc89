//! The names of the keys, all under the prefix (the layout is in the crate docs).
//!
//! A session's keys carry its id in braces, a Redis Cluster hash tag, so that they sit in one
//! slot and the scripts that touch several of them stay valid there; the membership's keys
//! carry `{m}`, their own slot, read apart from any session's.

/// The names of one backend's keys.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    /// The channel the nodes announce changes to their listen streams on (sharded pub/sub on
    /// a cluster: the channel's slot is the name's).
    pub(crate) fn changes(&self) -> String {
        format!("{}:changes", self.prefix)
    }

    /// The session: a hash of its activity, version, holder and streams' bookkeeping, small
    /// values only, which Redis keeps compact (a listpack).
    pub(crate) fn session(&self, session: &str) -> String {
        self.of(session, "")
    }

    /// The session's record: its owner and its `initialize`, the large part, a string of its
    /// own (in the hash, one value over 64 bytes would make Redis keep the whole hash as a
    /// table, twice the size).
    pub(crate) fn record(&self, session: &str) -> String {
        self.of(session, ":r")
    }

    /// The finished streams' bookkeeping, kept for the resume window: a hash of stream to
    /// bookkeeping (small values: Redis keeps it compact).
    pub(crate) fn finished(&self, session: &str) -> String {
        self.of(session, ":f")
    }

    /// The finished streams in the order they finished, the order they go in: a list.
    pub(crate) fn queue(&self, session: &str) -> String {
        self.of(session, ":q")
    }

    /// The session's hash, its record, its finished streams and their queue, in that order:
    /// the keys of the scripts that write a session's events or end it.
    pub(crate) fn of_session(&self, session: &str) -> [String; 4] {
        [
            self.session(session),
            self.record(session),
            self.finished(session),
            self.queue(session),
        ]
    }

    /// A key of `session`: the prefix, its id as the hash tag, then `rest`. Written piece by
    /// piece into a string of its size: a session's keys are named several times a request,
    /// and `format!` (which grows its string as it goes) cost about six times as much.
    fn of(&self, session: &str, rest: &str) -> String {
        let mut key = String::with_capacity(self.prefix.len() + session.len() + rest.len() + 3);
        key.push_str(&self.prefix);
        key.push_str(":{");
        key.push_str(session);
        key.push('}');
        key.push_str(rest);
        key
    }

    /// The stream a forward began, remembered for a while: a string.
    pub(crate) fn forward(&self, session: &str, forward: &str) -> String {
        let mut key = self.of(session, ":w:");
        key.push_str(forward);
        key
    }

    /// The events of one stream of the session: a list.
    pub(crate) fn stream(&self, session: &str, stream: u64) -> String {
        format!("{}:{{{session}}}:{stream}", self.prefix)
    }

    /// A client's rate-limit bucket (`name`: `*` or a method): a string, its theoretical
    /// arrival time. The client is the hash tag, so that its buckets sit in one slot; a client
    /// with braces in it (or starting with `#`) goes in hexadecimal after a `#`, so that it
    /// cannot end the tag early nor be taken for another.
    pub(crate) fn rate(&self, client: &str, name: &str) -> String {
        if client.contains(['{', '}']) || client.starts_with('#') {
            let hex: String = client.bytes().map(|b| format!("{b:02x}")).collect();
            format!("{}:rl:{{#{hex}}}:{name}", self.prefix)
        } else {
            format!("{}:rl:{{{client}}}:{name}", self.prefix)
        }
    }

    /// A DPoP proof accepted (feature `dpop`): a string, for as long as a replay could come;
    /// the id (a hash of the key and the `jti`) in hexadecimal.
    #[cfg_attr(not(feature = "dpop"), allow(dead_code))]
    pub(crate) fn proof(&self, id: &[u8; 32]) -> String {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        format!("{}:dpop:{hex}", self.prefix)
    }

    /// The nodes: a hash of each one's incarnation, address and lease.
    pub(crate) fn members(&self) -> String {
        format!("{}:{{m}}:members", self.prefix)
    }

    /// Since when renewals have come without a break.
    pub(crate) fn up(&self) -> String {
        format!("{}:{{m}}:up", self.prefix)
    }

    /// The key the nodes sign their forwards with.
    pub(crate) fn secret(&self) -> String {
        format!("{}:{{m}}:secret", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_keys_share_its_hash_tag_and_the_members_theirs() {
        let keys = Keys::new("p");
        assert_eq!(keys.session("s1"), "p:{s1}");
        assert_eq!(keys.record("s1"), "p:{s1}:r");
        assert_eq!(keys.stream("s1", 4), "p:{s1}:4");
        assert_eq!(keys.finished("s1"), "p:{s1}:f");
        assert_eq!(keys.queue("s1"), "p:{s1}:q");
        assert_eq!(keys.forward("s1", "x"), "p:{s1}:w:x");
        assert_eq!(keys.rate("ip 10.0.0.1", "*"), "p:rl:{ip 10.0.0.1}:*");
        assert_eq!(
            keys.rate("owner a}b", "tools/call"),
            "p:rl:{#6f776e657220617d62}:tools/call"
        );
        assert_eq!(
            keys.proof(&[0xab; 32]),
            format!("p:dpop:{}", "ab".repeat(32))
        );
        for key in [keys.members(), keys.up(), keys.secret()] {
            assert!(key.starts_with("p:{m}:"), "{key}");
        }
    }
}
