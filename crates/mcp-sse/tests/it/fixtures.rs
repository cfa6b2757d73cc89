//! Fixture streams (`tests/fixtures/*.sse`, raw bytes as on the wire) with their expected events
//! (the sibling `*.events`), each scanned whole and in chunks of 1, 2 and 3 bytes, and checked
//! against the reference parser too.
//!
//! The `.events` format: `#` comments; `event` opens an expected event, whose `name`, `id`,
//! `retry` (milliseconds) and `data` lines follow, indented (several `data` lines join with LF);
//! then, not indented, the state at the end of the stream: `last-event-id`, `retry` (`none` or milliseconds), and
//! `dropped` (`yes` when the stream ended inside an event). A value follows `key:` and one
//! space; `\u{HEX}` and `\\` are escapes.

use std::{fs, path::Path, time::Duration};

use mcp_sse::{Event, Scanner};

use crate::{Outcome, reference, scan};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

#[test]
fn fixtures_scan_to_their_expected_events_whatever_the_chunking() {
    let mut names: Vec<String> = fs::read_dir(DIR)
        .expect("fixture directory")
        .map(|entry| entry.expect("fixture entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
        .map(|path| {
            path.file_stem()
                .expect("name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert!(names.len() >= 18, "fixtures missing: found {names:?}");

    for name in &names {
        let input = fs::read(Path::new(DIR).join(format!("{name}.sse"))).expect("input");
        let text = fs::read_to_string(Path::new(DIR).join(format!("{name}.events")))
            .unwrap_or_else(|error| panic!("{name}.events: {error}"));
        let expected =
            parse_expected(&text).unwrap_or_else(|error| panic!("{name}.events: {error}"));

        assert_eq!(
            reference::parse(&input),
            expected,
            "{name}: reference parser"
        );
        assert_eq!(
            scan(Scanner::new(), [&input[..]]),
            expected,
            "{name}: whole"
        );
        for size in [1, 2, 3] {
            let outcome = scan(Scanner::new(), input.chunks(size));
            assert_eq!(outcome, expected, "{name}: chunks of {size} bytes");
        }
    }
}

#[test]
fn expected_format_is_read_as_documented() {
    let text = "# comment\nevent\n  name: a\n  id:\n  retry: 5\n  data:  x\n  data: \\u{FEFF}\\\\\n\
                last-event-id: 1\nretry: none\ndropped: yes\n";
    let expected = Outcome {
        events: vec![Ok(Event::new(" x\n\u{FEFF}\\")
            .with_name("a")
            .with_id("")
            .with_retry(Duration::from_millis(5)))],
        last_event_id: "1".to_owned(),
        retry: None,
        dropped: true,
    };
    assert_eq!(parse_expected(text), Ok(expected));
    assert!(
        parse_expected("event\n  data: x\n").is_err(),
        "end state is required"
    );
    assert!(parse_expected("data: x\nlast-event-id:\nretry: none\ndropped: no\n").is_err());
}

fn parse_expected(text: &str) -> Result<Outcome, String> {
    let mut events: Vec<(Event, Vec<String>)> = Vec::new();
    let (mut last_event_id, mut retry, mut dropped) = (None, None, None);
    for raw in text.lines() {
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "event" {
            events.push((Event::default(), Vec::new()));
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .ok_or(format!("no colon in {line:?}"))?;
        let value = unescape(value.strip_prefix(' ').unwrap_or(value))?;
        if line.len() < raw.len() {
            // Indented: a field of the event opened last.
            let (event, data) = events.last_mut().ok_or(format!("{key} outside an event"))?;
            match key {
                "name" => event.name = Some(value),
                "id" => event.id = Some(value),
                "retry" => event.retry = parse_millis(&value)?,
                "data" => data.push(value),
                _ => return Err(format!("unknown event key {key:?}")),
            }
        } else {
            match key {
                "last-event-id" => last_event_id = Some(value),
                "retry" => retry = Some(parse_millis(&value)?),
                "dropped" => dropped = Some(value == "yes"),
                _ => return Err(format!("unknown key {key:?}")),
            }
        }
    }
    let events = events
        .into_iter()
        .map(|(mut event, data)| {
            event.data = data.join("\n");
            Ok(event)
        })
        .collect();
    Ok(Outcome {
        events,
        last_event_id: last_event_id.ok_or("no last-event-id")?,
        retry: retry.ok_or("no retry")?,
        dropped: dropped.ok_or("no dropped")?,
    })
}

fn parse_millis(value: &str) -> Result<Option<Duration>, String> {
    if value == "none" {
        return Ok(None);
    }
    let millis = value.parse().map_err(|_| format!("bad retry {value:?}"))?;
    Ok(Some(Duration::from_millis(millis)))
}

fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(backslash) = rest.find('\\') {
        out.push_str(&rest[..backslash]);
        rest = &rest[backslash + 1..];
        if let Some(after) = rest.strip_prefix('\\') {
            out.push('\\');
            rest = after;
        } else if let Some(after) = rest.strip_prefix("u{") {
            let close = after.find('}').ok_or("unclosed \\u{")?;
            let code = u32::from_str_radix(&after[..close], 16).map_err(|e| e.to_string())?;
            out.push(char::from_u32(code).ok_or("not a char")?);
            rest = &after[close + 1..];
        } else {
            return Err(format!("bad escape in {value:?}"));
        }
    }
    out.push_str(rest);
    Ok(out)
}
