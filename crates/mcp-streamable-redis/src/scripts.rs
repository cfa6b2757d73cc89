//! The Lua scripts: each runs atomically in Redis, in one round trip, on the keys of one slot.

use std::sync::LazyLock;

use redis::{Cmd, Script, ToRedisArgs};

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

/// The arguments and bytes a call's command has room for when made: its keys (a session's
/// four, of some 60 bytes) and about twenty arguments; a larger one (a long answer) grows once.
const CALL_ARGS: usize = 32;
const CALL_BYTES: usize = 1024;

/// One call of a script: `EVALSHA` written straight into one command's buffer, its keys first.
///
/// The redis crate's own `ScriptInvocation` keeps each key and argument in a buffer of its own
/// and copies them into a command when sent: some 15 allocations and copies for a `write`,
/// twice per request on the hot path.
pub(crate) struct Call {
    script: &'static Script,
    cmd: Cmd,
}

impl Call {
    /// A call of `script` on `keys` (its `KEYS`); its arguments follow with [`Call::arg`].
    pub(crate) fn new<K: ToRedisArgs>(script: &'static Script, keys: &[K]) -> Call {
        // Room for a call on the hot path (`begin`, a `write` of an answer) without growing
        // the command's buffers as it is written: grown from empty, they were reallocated some
        // ten times a call.
        let mut cmd = Cmd::with_capacity(CALL_ARGS, CALL_BYTES);
        cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys.len());
        for key in keys {
            cmd.arg(key);
        }
        Call { script, cmd }
    }

    /// Adds the next of the script's `ARGV`.
    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Call {
        self.cmd.arg(arg);
        self
    }

    /// The script, to load it when Redis does not know it (`NOSCRIPT`).
    pub(crate) fn script(&self) -> &'static Script {
        self.script
    }

    /// The command, `EVALSHA` and all.
    pub(crate) fn cmd(&self) -> &Cmd {
        &self.cmd
    }
}
