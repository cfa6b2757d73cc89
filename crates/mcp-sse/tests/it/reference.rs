//! A plain reading of the WHATWG steps, to check the scanner against: decode the whole input,
//! split it into lines, interpret them one by one. No chunks, no bounds, no cleverness.

use std::time::Duration;

use mcp_sse::Event;

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
