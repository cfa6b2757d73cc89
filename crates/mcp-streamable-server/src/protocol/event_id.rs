//! The ids of the events of a session's streams: `<stream>_<index>`.

use std::fmt;
use std::str::FromStr;

/// An event's place: the stream of the session it was sent on, and its index there. Written
/// and read in one place, as `<stream>_<index>` (digits, an underscore, digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) stream: u64,
    pub(crate) index: u64,
}

/// The longest id: two `u64`s and the underscore.
const MAX_LEN: usize = 20 + 1 + 20;

impl EventId {
    pub(crate) fn new(stream: u64, index: u64) -> Self {
        EventId { stream, index }
    }

    /// The id as text, without allocating: what an SSE frame writes per event (with `itoa`, not
    /// `write!`, whose formatting machinery cost about 1,300 instructions an event).
    pub(crate) fn write<R>(self, with: impl FnOnce(&str) -> R) -> R {
        let mut buf = [0u8; MAX_LEN];
        let (mut stream, mut index) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (stream, index) = (stream.format(self.stream), index.format(self.index));
        let len = stream.len() + 1 + index.len();
        buf[..stream.len()].copy_from_slice(stream.as_bytes());
        buf[stream.len()] = b'_';
        buf[stream.len() + 1..len].copy_from_slice(index.as_bytes());
        with(std::str::from_utf8(&buf[..len]).unwrap_or_default())
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.stream, self.index)
    }
}

/// Text that is not an id this server gave out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MalformedEventId;

impl FromStr for EventId {
    type Err = MalformedEventId;

    fn from_str(id: &str) -> Result<Self, MalformedEventId> {
        let (stream, index) = id.split_once('_').ok_or(MalformedEventId)?;
        let number = |s: &str| {
            if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(MalformedEventId);
            }
            s.parse().map_err(|_| MalformedEventId)
        };
        Ok(EventId::new(number(stream)?, number(index)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip_and_parse_strictly() {
        for (text, stream, index) in [("0_0", 0, 0), ("12_345", 12, 345)] {
            let id = EventId::new(stream, index);
            assert_eq!(text.parse(), Ok(id));
            assert_eq!(id.to_string(), text);
            assert_eq!(id.write(str::to_owned), text);
        }
        let max = EventId::new(u64::MAX, u64::MAX);
        assert_eq!(max.write(|s| s.parse()), Ok(max));
        for bad in [
            "",
            "_",
            "1_",
            "_1",
            "1-2",
            "a_1",
            "1_b",
            "1_2_3",
            "+1_2",
            "1_ 2",
            "99999999999999999999999_1",
            "18446744073709551616_1",
            "١_٢",
        ] {
            assert_eq!(bad.parse::<EventId>(), Err(MalformedEventId), "{bad}");
        }
    }
}
