//! A plain reading of the WHATWG steps, to check the scanner against: decode the whole input,
//! split it into lines, interpret them one by one. No chunks, no bounds, no cleverness.

use std::time::Duration;

use mcp_sse::{Event, ScanError};

use crate::Outcome;

pub(crate) fn parse(input: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(input);
    let mut rest = text.strip_prefix('\u{FEFF}').unwrap_or(&text);

    let mut events = Vec::new();
    let mut data = String::new();
    let mut event_type: Option<String> = None;
    let mut last_event_id_buffer = String::new();
    let mut last_event_id = String::new();
    let mut retry = None;
    let mut block_id = None;
    let mut block_retry = None;

    // A final line without a line end is never interpreted.
    while let Some(end) = rest.find(['\r', '\n']) {
        let line = &rest[..end];
        let crlf = rest[end..].starts_with("\r\n");
        rest = &rest[end + if crlf { 2 } else { 1 }..];

        if line.is_empty() {
            last_event_id.clone_from(&last_event_id_buffer);
            if !data.is_empty() {
                data.pop();
                let mut event = Event::new(std::mem::take(&mut data));
                event.name = event_type.take().filter(|name| !name.is_empty());
                event.id = block_id.take();
                event.retry = block_retry;
                events.push(Ok(event));
            }
            data.clear();
            event_type = None;
            block_id = None;
            block_retry = None;
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => event_type = Some(value.to_owned()),
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            "id" if !value.contains('\0') => {
                last_event_id_buffer = value.to_owned();
                block_id = Some(value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                let millis = value.parse().unwrap_or(u64::MAX);
                block_retry = Some(Duration::from_millis(millis));
                retry = block_retry;
            }
            _ => {}
        }
    }
    // Something left over, or an event begun: the stream ended inside an event.
    let dropped = !rest.is_empty()
        || !data.is_empty()
        || event_type.is_some()
        || block_id.is_some()
        || block_retry.is_some();
    Outcome {
        events,
        last_event_id,
        retry,
        dropped,
    }
}

/// The same steps with the scanner's bound on one event (E4), read from its documentation: a
/// line that would take the event's data, name and id past `limit` bytes (its raw bytes before
/// it is applied, its decoded value after) is not applied, and the event is dropped with one
/// error up to its blank line; an `id` read before that line still counts. A final line
/// without a line end counts against the bound too, though it is never applied.
pub(crate) fn parse_bounded(input: &[u8], limit: usize) -> Outcome {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let mut lines = Vec::new();
    let mut rest = input;
    while let Some(end) = rest.iter().position(|&b| b == b'\r' || b == b'\n') {
        lines.push(&rest[..end]);
        let crlf = rest[end..].starts_with(b"\r\n");
        rest = &rest[end + if crlf { 2 } else { 1 }..];
    }

    let mut events = Vec::new();
    let mut block = Block::default();
    let mut discarding = false;
    let mut last_event_id = String::new();
    let mut retry = None;
    for line in lines {
        if discarding {
            if line.is_empty() {
                discarding = false;
                block.end(&mut last_event_id);
            }
            continue;
        }
        if line.is_empty() {
            if let Some(event) = block.dispatch() {
                events.push(Ok(event));
            }
            block.end(&mut last_event_id);
            continue;
        }
        if block.size() + line.len() > limit || !block.apply(line, limit, &mut retry) {
            events.push(Err(ScanError::EventTooLarge { limit }));
            discarding = true;
            block.data.clear();
            block.name = None;
            block.retry = None;
        }
    }
    if !discarding && rest.len() > limit.saturating_sub(block.size()) {
        events.push(Err(ScanError::EventTooLarge { limit }));
        discarding = true;
    }
    let dropped = discarding
        || !rest.is_empty()
        || !block.data.is_empty()
        || block.name.is_some()
        || block.id.is_some()
        || block.retry.is_some();
    Outcome {
        events,
        last_event_id,
        retry,
        dropped,
    }
}

/// The fields of the event being read, for [`parse_bounded`].
#[derive(Default)]
struct Block {
    /// Each `data` value and a LF.
    data: String,
    name: Option<String>,
    id: Option<String>,
    retry: Option<Duration>,
}

impl Block {
    fn size(&self) -> usize {
        self.data.len() + self.name.as_ref().map_or(0, String::len) + self.id_len()
    }

    fn id_len(&self) -> usize {
        self.id.as_ref().map_or(0, String::len)
    }

    /// Applies a line unless that takes the block past `limit`; returns whether it fitted.
    fn apply(&mut self, line: &[u8], limit: usize, retry: &mut Option<Duration>) -> bool {
        let line = String::from_utf8_lossy(line);
        if line.starts_with(':') {
            return true;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (&*line, ""),
        };
        match field {
            "event" => self.name = Some(value.to_owned()),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" if !value.contains('\0') => {
                if self.size() - self.id_len() + value.len() > limit {
                    return false;
                }
                self.id = Some(value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                let millis = value.parse().unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(millis));
                *retry = self.retry;
            }
            _ => {}
        }
        self.size() <= limit
    }

    fn dispatch(&mut self) -> Option<Event> {
        if self.data.is_empty() {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        let mut event = Event::new(data);
        event.name = self.name.take().filter(|name| !name.is_empty());
        event.id = self.id.clone();
        event.retry = self.retry;
        Some(event)
    }

    /// A blank line ends the block, dispatched or not: its id becomes the last event id.
    fn end(&mut self, last_event_id: &mut String) {
        if let Some(id) = self.id.take() {
            *last_event_id = id;
        }
        *self = Block::default();
    }
}
