//! The errors of this crate: encoding an event, scanning a stream, and reading a stream of chunks.

use std::{error::Error, fmt};

/// Why an event could not be encoded.
///
/// Nothing is written to the destination buffer when encoding fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The event name holds a CR or LF, which would end the `event` line early (E5).
    LineBreakInName,
    /// The id holds a CR or LF, which would end the `id` line early (E5).
    LineBreakInId,
    /// The id holds a NUL character, which a WHATWG parser ignores, so the client would resume
    /// from the wrong place (E3).
    NulInId,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EncodeError::LineBreakInName => "event name contains a line break",
            EncodeError::LineBreakInId => "event id contains a line break",
            EncodeError::NulInId => "event id contains a nul character",
        })
    }
}

impl Error for EncodeError {}

/// Why a [`Scanner`](crate::Scanner) could not deliver an event.
///
/// Scanning errors are not fatal: the scanner skips the offending event and goes on with the
/// next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScanError {
    /// One event needed more than `limit` bytes of buffer (E4). The rest of the event, up to its
    /// terminating blank line, is discarded without being buffered.
    EventTooLarge {
        /// The scanner's [`max_event_size`](crate::Scanner::max_event_size).
        limit: usize,
    },
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanError::EventTooLarge { limit } => {
                write!(f, "event larger than the limit of {limit} bytes")
            }
        }
    }
}

impl Error for ScanError {}

/// An error of an [`EventStream`](crate::EventStream): the source of the chunks failed, or the
/// chunks did not scan.
///
/// The cause is available from [`Error::source`].
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamError<E> {
    /// The underlying stream of chunks yielded an error.
    Source(E),
    /// The chunks read so far hold an event that could not be delivered; the stream goes on with
    /// the next event.
    Scan(ScanError),
}

impl<E> fmt::Display for StreamError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamError::Source(_) => "failed to read the event stream",
            StreamError::Scan(_) => "failed to scan the event stream",
        })
    }
}

impl<E: Error + 'static> Error for StreamError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            StreamError::Source(error) => Some(error),
            StreamError::Scan(error) => Some(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lower_case_without_a_period() {
        let messages = [
            EncodeError::LineBreakInName.to_string(),
            EncodeError::LineBreakInId.to_string(),
            EncodeError::NulInId.to_string(),
            ScanError::EventTooLarge { limit: 16 }.to_string(),
            StreamError::<std::io::Error>::Scan(ScanError::EventTooLarge { limit: 1 }).to_string(),
        ];
        for message in messages {
            assert!(!message.ends_with('.'), "{message}");
            assert_eq!(message, message.to_lowercase());
        }
        assert_eq!(
            ScanError::EventTooLarge { limit: 16 }.to_string(),
            "event larger than the limit of 16 bytes"
        );
    }

    #[test]
    fn stream_error_gives_its_cause_as_source() {
        let io = std::io::Error::other("connection reset");
        let error = StreamError::Source(io);
        assert_eq!(error.to_string(), "failed to read the event stream");
        assert_eq!(
            error.source().map(ToString::to_string).as_deref(),
            Some("connection reset")
        );

        let error = StreamError::<std::io::Error>::Scan(ScanError::EventTooLarge { limit: 8 });
        let source = error.source().and_then(|s| s.downcast_ref::<ScanError>());
        assert_eq!(source, Some(&ScanError::EventTooLarge { limit: 8 }));
    }
}
