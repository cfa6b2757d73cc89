//! The bound on one event (E4): an error once, then the next event, and bounded memory.

use mcp_sse::{DEFAULT_MAX_EVENT_SIZE, Event, ScanError, Scanner};

use crate::scan;

#[test]
fn e4_default_bound_is_16_mib() {
    assert_eq!(DEFAULT_MAX_EVENT_SIZE, 16 * 1024 * 1024);
    assert_eq!(Scanner::new().max_event_size(), DEFAULT_MAX_EVENT_SIZE);
    assert_eq!(Scanner::default().max_event_size(), DEFAULT_MAX_EVENT_SIZE);
}

#[test]
fn e4_event_over_the_bound_errors_once_and_the_next_one_is_delivered() {
    let limit = 1000;
    let mut input = b"data: before\n\nid: big\ndata: ".to_vec();
    input.extend(std::iter::repeat_n(b'x', 5000));
    input.extend_from_slice(b"\ndata: rest of the big event\nid: ignored\n\ndata: after\n\n");
    for size in [1, 16, 4096, input.len()] {
        let outcome = scan(Scanner::with_max_event_size(limit), input.chunks(size));
        assert_eq!(
            outcome.events,
            [
                Ok(Event::new("before")),
                Err(ScanError::EventTooLarge { limit }),
                Ok(Event::new("after"))
            ],
            "chunks of {size}"
        );
        // Lines after the overflow are dropped unread; the id before it counts.
        assert_eq!(outcome.last_event_id, "big");
        assert!(!outcome.dropped);
    }
}

#[test]
fn e4_event_exactly_at_the_bound_is_delivered() {
    // The line being read ("data: " and 4 bytes) and then the data ("1234" and a LF) are the
    // bytes buffered: at most 10.
    let outcome = scan(Scanner::with_max_event_size(10), [&b"data: 1234\n\n"[..]]);
    assert_eq!(outcome.events, [Ok(Event::new("1234"))]);
    let outcome = scan(Scanner::with_max_event_size(9), [&b"data: 1234\n\n"[..]]);
    assert_eq!(outcome.events, [Err(ScanError::EventTooLarge { limit: 9 })]);
}

#[test]
fn e4_64_mib_without_a_newline_keeps_the_buffer_within_the_bound() {
    let limit = 64 * 1024;
    let chunk = [b'a'; 512];
    let mut scanner = Scanner::with_max_event_size(limit);
    let mut errors = 0;
    scanner.feed(b"data: ");
    for _ in 0..(64 * 1024 * 1024 / chunk.len()) {
        scanner.feed(&chunk);
        assert!(scanner.buffered_len() <= limit + chunk.len());
        loop {
            match scanner.next_event() {
                Ok(None) => break,
                Ok(Some(event)) => panic!("no event is complete: {event:?}"),
                Err(error) => {
                    assert_eq!(error, ScanError::EventTooLarge { limit });
                    errors += 1;
                }
            }
        }
        assert!(scanner.buffered_len() <= limit);
    }
    assert_eq!(errors, 1, "one error for the one event");
    scanner.feed(b"\r\n\r\ndata: next\r\n\r\n");
    assert_eq!(scanner.next_event(), Ok(Some(Event::new("next"))));
}

#[test]
fn e4_many_events_one_chunk_each_does_not_grow_the_buffer() {
    let mut scanner = Scanner::with_max_event_size(100);
    for n in 0..100_000 {
        let event = format!("id: {n}\ndata: {n}\n\n");
        scanner.feed(event.as_bytes());
        assert!(matches!(scanner.next_event(), Ok(Some(_))));
        assert_eq!(scanner.buffered_len(), 0);
    }
    assert_eq!(scanner.last_event_id(), "99999");
}

#[test]
fn e4_an_id_of_invalid_utf8_stays_within_the_bound() {
    // Each byte of the `id` line becomes U+FFFD, three bytes: a line that fits the bound makes
    // an id three times its size. The line goes over the bound, so it is not applied: the id
    // read before it stands, and nothing held or reported exceeds the bound.
    for limit in [16, 1024 * 1024] {
        let mut scanner = Scanner::with_max_event_size(limit);
        let mut line = b"id: 1\n\nid: ".to_vec();
        line.extend(std::iter::repeat_n(0xFF, limit - 4));
        line.push(b'\n');
        let mut events = Vec::new();
        for chunk in [&line[..], b"data: x\n\n", b"data: after\n\n"] {
            scanner.feed(chunk);
            loop {
                match scanner.next_event() {
                    Ok(None) => break,
                    event => events.push(event.transpose().expect("not None")),
                }
            }
            assert!(
                scanner.buffered_len() <= limit,
                "bound {limit}: {} bytes held",
                scanner.buffered_len()
            );
            assert!(scanner.last_event_id().len() <= limit, "bound {limit}");
        }
        assert_eq!(
            events,
            [
                Err(ScanError::EventTooLarge { limit }),
                Ok(Event::new("after"))
            ]
        );
        assert_eq!(scanner.last_event_id(), "1", "bound {limit}");
    }
}
