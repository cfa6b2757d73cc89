//! Why a request relayed to a child got no answer from it: each becomes the JSON-RPC error the
//! client reads (-32603, internal error: the server behind the gateway failed, not the
//! client's request).

use std::fmt;
use std::time::Duration;

use mcp_jsonrpc::{ErrorObject, code};

/// What went wrong between the gateway and a child.
#[derive(Debug, Clone)]
pub(crate) enum Error {
    /// The command could not be started (not found, not executable...).
    Spawn(String),
    /// The child closed its stdout or exited.
    Exited,
    /// The child wrote a line that is not JSON-RPC.
    Garbage,
    /// The child wrote a line longer than the bound.
    TooLarge(usize),
    /// The child did not answer in time.
    Timeout(Duration),
    /// The child answered the gateway's own `initialize` with an error (its message).
    Initialize(String),
}

impl Error {
    /// The error a client reads for it.
    pub(crate) fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(code::INTERNAL_ERROR, self.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spawn(why) => write!(f, "the stdio server could not be started: {why}"),
            Error::Exited => f.write_str("the stdio server exited"),
            Error::Garbage => f.write_str("the stdio server wrote a line that is not JSON-RPC"),
            Error::TooLarge(max) => write!(f, "the stdio server wrote a line over {max} bytes"),
            Error::Timeout(after) => write!(f, "the stdio server did not answer within {after:?}"),
            Error::Initialize(why) => write!(f, "the stdio server refused initialize: {why}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_is_an_internal_error_saying_what_happened() {
        let timeout = Error::Timeout(Duration::from_secs(2)).to_error_object();
        assert_eq!(timeout.code, code::INTERNAL_ERROR);
        assert_eq!(timeout.message, "the stdio server did not answer within 2s");
        assert!(Error::TooLarge(10).to_string().contains("10 bytes"));
    }
}
