//! The incremental scanner: bytes in, events out, following the WHATWG HTML rules for
//! `text/event-stream` (E1-E4).
//!
//! Like tokio-util's `LinesCodec` it remembers how far it has searched for a line end, so it never
//! searches the same bytes twice however the input is chunked, and it bounds what it buffers for
//! one event.

use std::{fmt, mem, time::Duration};

use memchr::{memchr, memchr2};

use crate::{Event, ScanError};

/// The default bound on the bytes a [`Scanner`] buffers for one event: 16 MiB.
///
/// An MCP message can be large (a tool result embedding a file or an image), so the bound is
/// generous; but a peer must not be able to make a client buffer without limit by sending an
/// endless line or an endless event, so there is one.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 * 1024 * 1024;

/// The UTF-8 byte order mark, dropped at the very start of a stream (E1).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Consumed bytes are moved out of the buffer once there are at least this many of them and
/// at least as many as the bytes still to read: moving is then cheap and rare.
const COMPACT_AT: usize = 8 * 1024;

/// An emptied buffer larger than this is shrunk to it, so that one big event does not pin its
/// memory for the rest of a long-lived stream.
const SHRINK_ABOVE: usize = 64 * 1024;

/// An incremental `text/event-stream` parser, with no I/O inside.
///
/// [`feed`](Scanner::feed) it the bytes of a stream as they come, in chunks of any size, and
/// after each chunk call [`next_event`](Scanner::next_event) until it returns `Ok(None)`. At the
/// end of the stream call [`finish`](Scanner::finish).
///
/// ```
/// use mcp_sse::Scanner;
///
/// let mut scanner = Scanner::new();
/// let mut events = Vec::new();
/// for chunk in [&b"id: 1\r"[..], b"\ndata: hel", b"lo\r\n\r\ndata: unfinished"] {
///     scanner.feed(chunk);
///     while let Some(event) = scanner.next_event()? {
///         events.push(event);
///     }
/// }
/// assert!(scanner.finish(), "the unfinished event is dropped");
/// assert_eq!(events.len(), 1);
/// assert_eq!(events[0].data, "hello");
/// assert_eq!(scanner.last_event_id(), "1");
/// # Ok::<(), mcp_sse::ScanError>(())
/// ```
///
/// The rules, from the WHATWG HTML standard:
/// - Lines end in CRLF, LF or CR; a CRLF split between two chunks is one line end. A UTF-8 byte
///   order mark at the very start of the stream is dropped. Invalid UTF-8 becomes U+FFFD.
/// - `field: value` drops one space after the colon; a line without a colon is a field with an
///   empty value; a line starting with a colon is a comment; unknown fields are ignored; field
///   names are case-sensitive.
/// - `data` lines join with LF. A blank line dispatches the event, unless the block had no `data`
///   field. An `id` holding NUL is ignored; `retry` takes ASCII digits only.
/// - An event not ended by a blank line when the stream ends is dropped.
/// - The bytes buffered for one event (its data, name and id, and the line being read) may not
///   exceed [`max_event_size`](Scanner::max_event_size); see [`ScanError::EventTooLarge`].
pub struct Scanner {
    /// Input not consumed yet: the current line from `start`, then whatever follows.
    buf: Vec<u8>,
    /// Where the current line starts in `buf`.
    start: usize,
    /// `buf[start..searched]` holds no line end: where the search goes on.
    searched: usize,
    /// The last line ended in a CR at the end of `buf`: a LF opening the next chunk belongs to it.
    after_cr: bool,
    /// Nothing has been read from this stream yet, so a BOM may still come.
    at_stream_start: bool,
    /// How many bytes of a BOM the stream opened with so far, taken out of `buf`: until the next
    /// byte says whether they are a BOM or data, the scanner knows what they are without
    /// keeping them, as `after_cr` knows a CR.
    bom_seen: usize,
    /// An event went over the bound: its lines are dropped up to its blank line.
    discarding: bool,
    /// While discarding: the start of the current line was dropped, so it is not blank.
    line_dropped: bool,
    block: Block,
    // The fast path for small chunks in the middle of a line (see `feed_short`).
    /// What `room` was when `next_event` last returned, if nothing else needed attention then
    /// (no BOM to look for, no CR to pair, nothing to discard); else 0, which keeps `feed` from
    /// taking the fast path.
    fast_room: usize,
    /// `feed` found that `buf[searched]` is a CR or LF.
    at_line_end: bool,
    /// `next_event` has nothing to do until the next chunk.
    idle: bool,
    last_event_id: String,
    retry: Option<Duration>,
    max_event_size: usize,
}

/// The fields of the event being read.
#[derive(Debug, Default)]
struct Block {
    /// Each `data` line's value and a LF: empty exactly when there was no `data` field.
    data: String,
    name: Option<String>,
    id: Option<String>,
    retry: Option<Duration>,
}

impl Block {
    #[inline]
    fn size(&self) -> usize {
        self.data.len()
            + self.name.as_ref().map_or(0, String::len)
            + self.id.as_ref().map_or(0, String::len)
    }

    /// Applies one line that is not blank and whose bytes fit within `max` with the block (E2,
    /// E3), and tells whether the block still fits: replacing invalid UTF-8 with U+FFFD can
    /// make a value up to three times longer than its bytes.
    fn apply(&mut self, line: &[u8], max: usize, reconnect: &mut Option<Duration>) -> bool {
        if line[0] == b':' {
            return true;
        }
        // Known field names are at most five bytes long, so the colon that matters is among the
        // first six: a line without one there is an unknown field, not worth searching.
        let head = &line[..line.len().min(6)];
        let (field, value) = match head.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None if line.len() <= 5 => (line, &[][..]),
            None => return true,
        };
        match field {
            b"data" => {
                self.data.reserve(value.len() + 1);
                push_lossy(&mut self.data, value);
                self.data.push('\n');
            }
            b"event" => set_lossy(&mut self.name, value),
            // An id holding NUL is ignored (E3).
            b"id" if memchr(0, value).is_none() => {
                // The id outlives an overflow, to become the last event id, so one that would
                // not fit is not set: the id read before it stands.
                let others = self.size() - self.id.as_ref().map_or(0, String::len);
                if others + lossy_len(value) > max {
                    return false;
                }
                set_lossy(&mut self.id, value);
            }
            b"retry" => {
                if let Some(retry) = parse_retry(value) {
                    self.retry = Some(retry);
                    *reconnect = Some(retry);
                }
            }
            _ => {}
        }
        self.size() <= max
    }
}

impl Scanner {
    /// A scanner bounding events to [`DEFAULT_MAX_EVENT_SIZE`].
    pub fn new() -> Scanner {
        Scanner::with_max_event_size(DEFAULT_MAX_EVENT_SIZE)
    }

    /// A scanner bounding the bytes buffered for one event to `max_event_size`.
    pub fn with_max_event_size(max_event_size: usize) -> Scanner {
        Scanner {
            buf: Vec::new(),
            start: 0,
            searched: 0,
            after_cr: false,
            at_stream_start: true,
            bom_seen: 0,
            discarding: false,
            line_dropped: false,
            block: Block::default(),
            fast_room: 0,
            at_line_end: false,
            idle: false,
            last_event_id: String::new(),
            retry: None,
            max_event_size,
        }
    }

    /// The bound on the bytes buffered for one event.
    pub fn max_event_size(&self) -> usize {
        self.max_event_size
    }

    /// The id to resume from: the value of the last `id` field of a block ended by a blank line,
    /// whether or not that block was dispatched as an event (it had no data, or was too large).
    ///
    /// This is WHATWG's "last event ID string", which a client sends as `Last-Event-ID` when it
    /// reconnects: an `id` field in a block the stream did not finish does not count, since that
    /// event was not received. It is empty until a block sets it, and an empty `id` field resets
    /// it to empty. An `id` holding NUL is ignored. An `id` that would take its event past
    /// [`max_event_size`](Scanner::max_event_size) once decoded is not read (the event is
    /// dropped as too large), so this is never longer than that bound.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time given by the latest valid `retry` field, if any: a client waits
    /// this long before it reconnects. It takes effect as soon as its line is read.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// The bytes held for the event being read: its partial line, data, name and id, plus input
    /// fed but not scanned yet. After `next_event` returns `Ok(None)` this is at most
    /// [`max_event_size`](Scanner::max_event_size).
    pub fn buffered_len(&self) -> usize {
        self.buf.len() - self.start + self.block.size()
    }

    /// Adds the next chunk of the stream. Then call [`next_event`](Scanner::next_event) until it
    /// returns `Ok(None)`: the scanner bounds its memory only if it is drained after each chunk.
    #[inline]
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.start > 0 {
            self.compact();
        }
        if chunk.len() < SHORT && self.fast_room != 0 && self.searched == self.buf.len() {
            self.feed_short(chunk);
        } else {
            self.idle = false;
            self.buf.extend_from_slice(chunk);
        }
    }

    /// Appends a short chunk in the middle of a line, looking for a line end in the same pass.
    /// Reads of a few bytes are common (TLS records, chunked bodies), and then the cost per
    /// chunk matters more than the cost per byte: fixed-size moves beat a call to `memcpy`, and
    /// `next_event` has nothing left to do when the chunk does not end the line.
    #[inline]
    fn feed_short(&mut self, chunk: &[u8]) {
        self.buf.reserve(chunk.len());
        let mut found = None;
        let mut at = 0;
        let mut blocks = chunk.chunks_exact(16);
        for block in &mut blocks {
            let block: [u8; 16] = block.try_into().expect("sixteen bytes");
            self.buf.extend_from_slice(&block);
            if found.is_none() {
                found = find_in_block(u128::from_le_bytes(block)).map(|i| at + i);
            }
            at += 16;
        }
        for &byte in blocks.remainder() {
            self.buf.push(byte);
            if found.is_none() && (byte == b'\n' || byte == b'\r') {
                found = Some(at);
            }
            at += 1;
        }
        match found {
            None => {
                let len = self.buf.len();
                self.searched = len;
                self.idle = len - self.start <= self.fast_room;
            }
            Some(found) => {
                self.searched += found;
                self.at_line_end = true;
                self.idle = false;
            }
        }
    }

    /// The next complete event in the bytes fed so far, or `Ok(None)` when more input is needed.
    ///
    /// # Errors
    /// [`ScanError::EventTooLarge`] once for an event that goes over the bound; the scanner then
    /// drops the rest of that event without buffering it and goes on with the next one.
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<Event>, ScanError> {
        // The common case with small chunks, kept small as it runs once per chunk: `feed` found
        // that the chunk does not end the line, and the line is within the bound.
        if self.idle {
            return Ok(None);
        }
        let result = self.scan();
        // Nothing more to do until the next chunk only if `scan` ran out of input.
        self.idle = matches!(result, Ok(None));
        self.fast_room = if self.at_stream_start || self.after_cr || self.discarding {
            0
        } else {
            self.room()
        };
        result
    }

    fn scan(&mut self) -> Result<Option<Event>, ScanError> {
        if self.at_stream_start && !self.skip_bom() {
            return Ok(None);
        }
        loop {
            if self.after_cr {
                // E1: a CR at the end of the last chunk and a LF at the start of this one are
                // one line end.
                let Some(&next) = self.buf.get(self.start) else {
                    return Ok(None);
                };
                self.after_cr = false;
                if next == b'\n' {
                    self.start += 1;
                    self.searched = self.start;
                }
            }
            let found = if mem::take(&mut self.at_line_end) {
                Some(0)
            } else {
                find_line_end(&self.buf[self.searched..])
            };
            let Some(found) = found else {
                self.searched = self.buf.len();
                return self.partial_line();
            };
            if let Some(event) = self.end_line(self.searched + found)? {
                return Ok(Some(event));
            }
        }
    }

    /// Consumes the line ending at `buf[end]`, a CR or LF, and its line end.
    fn end_line(&mut self, end: usize) -> Result<Option<Event>, ScanError> {
        let mut next = end + 1;
        if self.buf[end] == b'\r' {
            match self.buf.get(next) {
                Some(b'\n') => next += 1,
                Some(_) => {}
                None => self.after_cr = true,
            }
        }
        let start = self.start;
        self.start = next;
        self.searched = next;
        self.line(start, end)
    }

    /// The bytes the line being read may take: the bound less what the event holds.
    #[inline]
    fn room(&self) -> usize {
        self.max_event_size.saturating_sub(self.block.size())
    }

    /// Ends the stream (E4): drops the unfinished event and any partial line, and returns whether
    /// there was anything to drop. Call it once `next_event` has returned `Ok(None)` after the
    /// last chunk; complete events not taken yet are dropped too.
    ///
    /// The scanner can then read the next stream from the same source, as after a reconnection:
    /// a BOM may open it again, and [`last_event_id`](Scanner::last_event_id) and
    /// [`retry`](Scanner::retry) carry over.
    pub fn finish(&mut self) -> bool {
        let dropped = self.discarding
            || self.bom_seen > 0
            || self.start < self.buf.len()
            || !self.block.data.is_empty()
            || self.block.name.is_some()
            || self.block.id.is_some()
            || self.block.retry.is_some();
        self.buf.clear();
        if self.buf.capacity() > SHRINK_ABOVE {
            self.buf.shrink_to(SHRINK_ABOVE);
        }
        self.start = 0;
        self.searched = 0;
        self.after_cr = false;
        self.at_stream_start = true;
        self.bom_seen = 0;
        self.discarding = false;
        self.line_dropped = false;
        self.block = Block::default();
        self.fast_room = 0;
        self.at_line_end = false;
        self.idle = false;
        dropped
    }

    /// Moves the bytes not consumed yet to the front of the buffer, when that is cheap enough.
    fn compact(&mut self) {
        let start = self.start;
        let len = self.buf.len();
        if start < len && start < COMPACT_AT.max(len - start) {
            return;
        }
        self.buf.copy_within(start.., 0);
        self.buf.truncate(len - start);
        self.searched -= start;
        self.start = 0;
        if self.buf.is_empty() && self.buf.capacity() > SHRINK_ABOVE {
            self.buf.shrink_to(SHRINK_ABOVE);
        }
    }

    /// Drops a BOM opening the stream, and tells whether scanning can go on: not while the bytes
    /// so far could still be the start of one. Those are taken out of the buffer, so that they
    /// count against the bound only once they are known to be data: then they are put back in
    /// front of what follows them.
    fn skip_bom(&mut self) -> bool {
        let seen = self.bom_seen;
        let head = &self.buf[self.start..];
        let n = head.len().min(BOM.len() - seen);
        if head[..n] != BOM[seen..seen + n] {
            self.buf
                .splice(self.start..self.start, BOM[..seen].iter().copied());
            self.searched = self.start;
            self.bom_seen = 0;
            self.at_stream_start = false;
            return true;
        }
        self.start += n;
        self.searched = self.start;
        if seen + n < BOM.len() {
            self.bom_seen = seen + n;
            return false;
        }
        self.bom_seen = 0;
        self.at_stream_start = false;
        true
    }

    /// No line end in the buffer: check the bound on the partial line.
    fn partial_line(&mut self) -> Result<Option<Event>, ScanError> {
        let partial = self.buf.len() - self.start;
        if self.discarding {
            if partial > 0 {
                self.line_dropped = true;
                self.buf.clear();
                self.start = 0;
                self.searched = 0;
            }
            return Ok(None);
        }
        if partial > self.room() {
            self.line_dropped = partial > 0;
            // Free the memory the oversized line took, not just its contents.
            self.buf = Vec::new();
            self.start = 0;
            self.searched = 0;
            return Err(self.overflow());
        }
        Ok(None)
    }

    /// Handles the complete line `buf[start..end]`.
    fn line(&mut self, start: usize, end: usize) -> Result<Option<Event>, ScanError> {
        let blank = start == end;
        if self.discarding {
            if blank && !self.line_dropped {
                self.discarding = false;
                self.end_block();
            }
            self.line_dropped = false;
            return Ok(None);
        }
        if blank {
            return Ok(self.dispatch());
        }
        // Checked for every line, as for a partial one, so that the outcome does not depend on
        // how the input was chunked.
        if self.block.size() + (end - start) > self.max_event_size {
            return Err(self.overflow());
        }
        if !self
            .block
            .apply(&self.buf[start..end], self.max_event_size, &mut self.retry)
        {
            return Err(self.overflow());
        }
        Ok(None)
    }

    /// Starts discarding the current event. Its `id`, if one was read, is kept: it still becomes
    /// the last event id at the blank line, so a client resuming does not ask for the event again.
    /// It is within the bound, as nothing else is kept.
    fn overflow(&mut self) -> ScanError {
        self.discarding = true;
        self.block.data = String::new();
        self.block.name = None;
        self.block.retry = None;
        ScanError::EventTooLarge {
            limit: self.max_event_size,
        }
    }

    /// A blank line (E3): set the last event id, and dispatch the event if it had data.
    fn dispatch(&mut self) -> Option<Event> {
        if self.block.data.is_empty() {
            self.end_block();
            return None;
        }
        if let Some(id) = &self.block.id {
            self.last_event_id.clone_from(id);
        }
        let mut data = mem::take(&mut self.block.data);
        data.pop();
        Some(Event {
            name: self.block.name.take().filter(|name| !name.is_empty()),
            id: self.block.id.take(),
            data,
            retry: self.block.retry.take(),
        })
    }

    /// Ends a block that is not dispatched.
    fn end_block(&mut self) {
        if let Some(id) = self.block.id.take() {
            self.last_event_id = id;
        }
        self.block.data.clear();
        self.block.name = None;
        self.block.retry = None;
    }
}

impl Default for Scanner {
    fn default() -> Scanner {
        Scanner::new()
    }
}

impl fmt::Debug for Scanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scanner")
            .field("buffered_len", &self.buffered_len())
            .field("discarding", &self.discarding)
            .field("last_event_id", &self.last_event_id)
            .field("retry", &self.retry)
            .field("max_event_size", &self.max_event_size)
            .finish_non_exhaustive()
    }
}

/// Below this many bytes, searching by hand ([`find_short`]) beats `memchr2` and its call
/// overhead, and `feed` searches a chunk itself (`feed_short`).
const SHORT: usize = 32;

/// The first CR or LF in `hay`.
fn find_line_end(hay: &[u8]) -> Option<usize> {
    if hay.len() < SHORT {
        find_short(hay)
    } else {
        memchr2(b'\n', b'\r', hay)
    }
}

/// The first CR or LF in a short `hay`.
fn find_short(hay: &[u8]) -> Option<usize> {
    let mut blocks = hay.chunks_exact(16);
    let mut at = 0;
    for block in &mut blocks {
        let block: [u8; 16] = block.try_into().expect("sixteen bytes");
        if let Some(i) = find_in_block(u128::from_le_bytes(block)) {
            return Some(at + i);
        }
        at += 16;
    }
    let tail = blocks.remainder();
    tail.iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map(|i| at + i)
}

/// The first CR or LF in sixteen bytes read as a little-endian integer.
#[inline]
fn find_in_block(block: u128) -> Option<usize> {
    const ONES: u128 = u128::from_ne_bytes([0x01; 16]);
    const HIGHS: u128 = u128::from_ne_bytes([0x80; 16]);
    // The high bit of each byte below `n`, and maybe of bytes above the first one: the lowest
    // bit set is exact.
    let below = |x: u128, n: u8| x.wrapping_sub(ONES * u128::from(n)) & !x & HIGHS;
    // Bytes below 0x0E, a superset of CR and LF and rare in text: one test for most blocks.
    if below(block, 0x0E) == 0 {
        return None;
    }
    let found =
        below(block ^ (ONES * u128::from(b'\n')), 1) | below(block ^ (ONES * u128::from(b'\r')), 1);
    (found != 0).then(|| found.trailing_zeros() as usize / 8)
}

/// Appends `bytes` decoded as UTF-8, invalid sequences replaced by U+FFFD as WHATWG's "UTF-8
/// decode" does; valid input is copied once.
fn push_lossy(dst: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => dst.push_str(text),
        Err(_) => {
            for chunk in bytes.utf8_chunks() {
                dst.push_str(chunk.valid());
                if !chunk.invalid().is_empty() {
                    dst.push(char::REPLACEMENT_CHARACTER);
                }
            }
        }
    }
}

/// The length of `bytes` once [`push_lossy`] has decoded them: each invalid sequence becomes
/// the three bytes of U+FFFD.
fn lossy_len(bytes: &[u8]) -> usize {
    bytes
        .utf8_chunks()
        .map(|chunk| {
            let replaced = !chunk.invalid().is_empty();
            chunk.valid().len() + usize::from(replaced) * char::REPLACEMENT_CHARACTER.len_utf8()
        })
        .sum()
}

fn set_lossy(dst: &mut Option<String>, bytes: &[u8]) {
    let dst = dst.get_or_insert_with(String::new);
    dst.clear();
    push_lossy(dst, bytes);
}

/// A `retry` value: ASCII digits only, at least one; a value too large saturates.
fn parse_retry(value: &[u8]) -> Option<Duration> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let millis = value.iter().fold(0_u64, |millis, digit| {
        millis
            .saturating_mul(10)
            .saturating_add(u64::from(digit - b'0'))
    });
    Some(Duration::from_millis(millis))
}

#[cfg(test)]
mod tests;
