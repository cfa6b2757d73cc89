//! The names of the keys and channels, all under the prefix (the layout is in the crate docs).
//!
//! A session's keys carry its id in braces, a Redis Cluster hash tag, so that they sit in one
//! slot and the scripts that touch several of them stay valid there.

/// The names of one backend's keys and channels.
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

    /// The session's record: a hash.
    pub(crate) fn record(&self, session: &str) -> String {
        format!("{}:session:{{{session}}}", self.prefix)
    }

    /// The session's holder: a hash of `node` and `gen`.
    pub(crate) fn holder(&self, session: &str) -> String {
        format!("{}:holder:{{{session}}}", self.prefix)
    }

    /// The session's events, all its streams in the order appended: a Redis stream.
    pub(crate) fn log(&self, session: &str) -> String {
        format!("{}:log:{{{session}}}", self.prefix)
    }

    /// What is known of the session's streams: a hash.
    pub(crate) fn meta(&self, session: &str) -> String {
        format!("{}:meta:{{{session}}}", self.prefix)
    }

    /// The prefix of the node liveness keys, for the script that checks a holder's.
    pub(crate) fn node_prefix(&self) -> String {
        format!("{}:node:", self.prefix)
    }

    /// The liveness key of `node`, alive while its lease is.
    pub(crate) fn node(&self, node: &str) -> String {
        format!("{}:node:{node}", self.prefix)
    }

    /// The channel `node` reads forwarded envelopes and answers from.
    pub(crate) fn inbox(&self, node: &str) -> String {
        format!("{}:inbox:{node}", self.prefix)
    }

    /// The channel news of the session's writes go to.
    pub(crate) fn watch(&self, session: &str) -> String {
        format!("{}:watch:{{{session}}}", self.prefix)
    }

    /// The session a watch channel is of, if `channel` is one.
    pub(crate) fn session_of_watch<'a>(&self, channel: &'a str) -> Option<&'a str> {
        channel
            .strip_prefix(self.prefix.as_str())?
            .strip_prefix(":watch:{")?
            .strip_suffix('}')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_channels_name_their_session() {
        let keys = Keys::new("p");
        assert_eq!(keys.watch("s1"), "p:watch:{s1}");
        assert_eq!(keys.session_of_watch(&keys.watch("s1")), Some("s1"));
        assert_eq!(keys.session_of_watch("p:inbox:n"), None);
        assert_eq!(keys.session_of_watch("q:watch:{s1}"), None);
    }
}
