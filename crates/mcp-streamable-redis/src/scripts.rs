//! The Lua scripts: each runs atomically in Redis, in one round trip.

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
    /// Appends an event and trims the session's log to its caps.
    APPEND,
    "append.lua"
);
script!(
    /// The events of a stream after an index, or why there are none.
    REPLAY,
    "replay.lua"
);
script!(
    /// Whether a stream is open, finished, or unknown.
    IS_FINISHED,
    "is_finished.lua"
);
script!(
    /// A stream got its last message.
    FINISHED,
    "finished.lua"
);
script!(
    /// A stream was opened with a priming event.
    OPENED,
    "opened.lua"
);
script!(
    /// A stream began for some requests.
    BEGAN,
    "began.lua"
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
    /// Who holds a session, taking it over if its holder lapsed.
    LOCATE,
    "locate.lua"
);
