//! The Lua scripts: each runs atomically in Redis, in one round trip, on the keys of one slot.

use std::sync::LazyLock;

use redis::Script;

macro_rules! script {
    ($(#[$doc:meta])* $name:ident, $file:literal) => {
        $(#[$doc])*
        pub(crate) static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("lua/", $file))));
    };
}

script!(
    /// A session starts: its record, held by this node.
    START,
    "start.lua"
);
script!(
    /// Takes a session over from the holder read: a compare-and-swap.
    TAKE_OVER,
    "take_over.lua"
);
script!(
    /// Claims a session again for a new incarnation of its holder.
    RECLAIM,
    "reclaim.lua"
);
script!(
    /// The holder lets go of a session that goes on.
    HAND_OVER,
    "hand_over.lua"
);
script!(
    /// A session ended: its keys go, fenced.
    END,
    "end.lua"
);
script!(
    /// A session's record, kept by a session store used without a cluster.
    CREATE,
    "create.lua"
);
script!(
    /// A session's record.
    LOAD,
    "load.lua"
);
script!(
    /// A request of a session was seen.
    TOUCH,
    "touch.lua"
);
script!(
    /// A session's protocol version was settled.
    SET_VERSION,
    "set_version.lua"
);
script!(
    /// A stream begins for some requests, fenced, remembering the forward that carried them.
    BEGIN,
    "begin.lua"
);
script!(
    /// A batch of a session's writes, within its caps.
    WRITE,
    "write.lua"
);
script!(
    /// The events of a stream after an index, or why there are none.
    REPLAY,
    "replay.lua"
);
script!(
    /// The streams begun and not finished.
    UNFINISHED,
    "unfinished.lua"
);
script!(
    /// The nodes' membership: registered, renewed, left, or read.
    MEMBERS,
    "members.lua"
);
script!(
    /// The key the nodes sign their forwards with.
    SECRET,
    "secret.lua"
);
script!(
    /// Charges a request to a client's rate-limit buckets, all or none.
    RATE,
    "rate.lua"
);
