use super::*;

/// Feeds `chunks` one after the other, draining after each, then finishes the stream.
fn scan(scanner: &mut Scanner, chunks: &[&[u8]]) -> Vec<Result<Event, ScanError>> {
    let mut out = Vec::new();
    for chunk in chunks {
        scanner.feed(chunk);
        loop {
            match scanner.next_event() {
                Ok(Some(event)) => out.push(Ok(event)),
                Ok(None) => break,
                Err(error) => out.push(Err(error)),
            }
        }
    }
    scanner.finish();
    out
}

fn datas(chunks: &[&[u8]]) -> Vec<String> {
    scan(&mut Scanner::new(), chunks)
        .into_iter()
        .map(|event| event.expect("no error").data)
        .collect()
}

#[test]
fn e1_lines_end_in_lf_cr_or_crlf() {
    assert_eq!(datas(&[b"data: a\n\n"]), ["a"]);
    assert_eq!(datas(&[b"data: a\r\r"]), ["a"]);
    assert_eq!(datas(&[b"data: a\r\n\r\n"]), ["a"]);
    assert_eq!(datas(&[b"data: a\rdata: b\ndata: c\r\n\r"]), ["a\nb\nc"]);
}

#[test]
fn e1_crlf_split_across_chunks_is_one_line_end() {
    // Were the LF a second line end, it would be a blank line dispatching "a" alone.
    assert_eq!(datas(&[b"data: a\r", b"\ndata: b\n\n"]), ["a\nb"]);
    assert_eq!(datas(&[b"data: a\r", b"", b"\n", b"data: b\n\n"]), ["a\nb"]);
    assert_eq!(datas(&[b"data: a\r\n\r", b"\n"]), ["a"]);
    // A CR ending a chunk followed by something else is a line end on its own.
    assert_eq!(datas(&[b"data: a\r", b"data: b\r", b"\r"]), ["a\nb"]);
}

#[test]
fn e1_cr_at_a_chunk_end_dispatches_without_waiting_for_the_next_chunk() {
    let mut scanner = Scanner::new();
    scanner.feed(b"data: a\n\r");
    assert_eq!(scanner.next_event(), Ok(Some(Event::new("a"))));
    assert_eq!(scanner.next_event(), Ok(None));
}

#[test]
fn e1_leading_bom_is_dropped_even_when_split() {
    assert_eq!(datas(&[b"\xEF\xBB\xBFdata: a\n\n"]), ["a"]);
    assert_eq!(datas(&[b"\xEF", b"\xBB", b"\xBF", b"data: a\n\n"]), ["a"]);
    assert_eq!(datas(&[b"\xEF\xBB", b"\xBFdata: a\n\n"]), ["a"]);
}

#[test]
fn e1_bom_after_the_start_is_not_dropped() {
    // A second BOM makes the field name "\u{FEFF}data", an unknown field.
    assert!(datas(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"]).is_empty());
    assert_eq!(datas(&[b"data: \xEF\xBB\xBFa\n\n"]), ["\u{FEFF}a"]);
    // Bytes that only start like a BOM are data.
    assert_eq!(datas(&[b"\xEF", b"\xBBx\n", b"data: a\n\n"]), ["a"]);
}

#[test]
fn e2_one_space_after_the_colon_is_dropped() {
    assert_eq!(
        datas(&[b"data:a\n\ndata: a\n\ndata:  a\n\ndata: \n\n"]),
        ["a", "a", " a", ""]
    );
}

#[test]
fn e2_line_without_colon_is_field_with_empty_value_and_colon_first_is_comment() {
    assert_eq!(datas(&[b"data\n\n"]), [""]);
    assert_eq!(datas(&[b"data\ndata\n\n"]), ["\n"]);
    assert_eq!(datas(&[b": comment\ndata: a\n:\n\n"]), ["a"]);
    assert!(datas(&[b": only a comment\n\n"]).is_empty());
}

#[test]
fn e2_field_names_are_case_sensitive_and_unknown_ones_ignored() {
    assert_eq!(datas(&[b"Data: x\nfoo: y\ndata : z\ndata: a\n\n"]), ["a"]);
}

#[test]
fn e3_data_lines_join_with_lf_and_the_event_name_is_per_event() {
    let events = scan(
        &mut Scanner::new(),
        &[b"event: add\ndata: a\ndata:\ndata: b\n\ndata: c\n\n"],
    );
    assert_eq!(
        events,
        [
            Ok(Event::new("a\n\nb").with_name("add")),
            Ok(Event::new("c"))
        ]
    );
}

#[test]
fn e3_block_without_data_is_not_dispatched_but_sets_the_last_event_id() {
    let mut scanner = Scanner::new();
    let events = scan(&mut scanner, &[b"id: 7\nevent: x\nretry: 5\n\ndata: a\n\n"]);
    assert_eq!(events, [Ok(Event::new("a"))]);
    assert_eq!(scanner.last_event_id(), "7");
    assert_eq!(scanner.retry(), Some(Duration::from_millis(5)));
}

#[test]
fn e3_id_with_nul_is_ignored_and_empty_id_resets() {
    let mut scanner = Scanner::new();
    let events = scan(&mut scanner, &[b"id: 1\ndata: a\n\nid: 2\0\ndata: b\n\n"]);
    assert_eq!(
        events,
        [Ok(Event::new("a").with_id("1")), Ok(Event::new("b"))]
    );
    assert_eq!(scanner.last_event_id(), "1");

    scan(&mut scanner, &[b"id\n\n"]);
    assert_eq!(scanner.last_event_id(), "");
}

#[test]
fn e3_retry_takes_ascii_digits_only() {
    for bad in ["10a", "", " 10", "10 ", "-5", "1.5", "+1", "\u{0663}"] {
        let mut scanner = Scanner::new();
        let input = format!("retry: {bad}\ndata: a\n\n");
        let events = scan(&mut scanner, &[input.as_bytes()]);
        assert_eq!(events, [Ok(Event::new("a"))], "retry: {bad:?}");
        assert_eq!(scanner.retry(), None, "retry: {bad:?}");
    }
    let mut scanner = Scanner::new();
    let events = scan(&mut scanner, &[b"retry: 0250\ndata: a\n\n"]);
    let retry = Duration::from_millis(250);
    assert_eq!(events, [Ok(Event::new("a").with_retry(retry))]);
    assert_eq!(scanner.retry(), Some(retry));
    assert_eq!(
        parse_retry(b"99999999999999999999999"),
        Some(Duration::from_millis(u64::MAX))
    );
}

#[test]
fn e3_retry_takes_effect_before_the_event_ends() {
    let mut scanner = Scanner::new();
    scanner.feed(b"retry: 3000\ndata: a");
    assert_eq!(scanner.next_event(), Ok(None));
    assert_eq!(scanner.retry(), Some(Duration::from_secs(3)));
}

#[test]
fn e4_unfinished_event_at_end_of_stream_is_dropped() {
    let mut scanner = Scanner::new();
    let events = scan(&mut scanner, &[b"id: 1\ndata: a\n\nid: 2\ndata: b\n"]);
    assert_eq!(events, [Ok(Event::new("a").with_id("1"))]);
    // The id of the unfinished event was not committed, so a client resumes before it.
    assert_eq!(scanner.last_event_id(), "1");

    let mut scanner = Scanner::new();
    scanner.feed(b"data: a\n\ndata: b");
    assert_eq!(scanner.next_event(), Ok(Some(Event::new("a"))));
    assert_eq!(scanner.next_event(), Ok(None));
    assert!(scanner.finish());
    assert!(!scanner.finish(), "nothing left the second time");
}

#[test]
fn e4_search_resumes_where_it_stopped() {
    let mut scanner = Scanner::new();
    scanner.feed(b"data: ");
    for _ in 0..1000 {
        scanner.feed(b"x");
        assert_eq!(scanner.next_event(), Ok(None));
        assert_eq!(
            scanner.searched,
            scanner.buf.len(),
            "searched the whole buffer"
        );
        assert_eq!(scanner.start, 0, "the line is still being read");
    }
    scanner.feed(b"\n\n");
    assert_eq!(
        scanner.next_event().map(|e| e.map(|e| e.data.len())),
        Ok(Some(1000))
    );
}

#[test]
fn e4_oversized_event_errors_once_then_the_next_event_comes() {
    let mut scanner = Scanner::with_max_event_size(64);
    let big = format!(
        "id: 5\ndata: {}\ndata: more\n\ndata: next\n\n",
        "x".repeat(100)
    );
    for chunk_size in [1, 7, 64, big.len()] {
        let chunks: Vec<&[u8]> = big.as_bytes().chunks(chunk_size).collect();
        let events = scan(&mut scanner, &chunks);
        assert_eq!(
            events,
            [
                Err(ScanError::EventTooLarge { limit: 64 }),
                Ok(Event::new("next"))
            ],
            "chunks of {chunk_size}"
        );
        assert_eq!(
            scanner.last_event_id(),
            "5",
            "the id read before the overflow counts"
        );
    }
}

#[test]
fn e4_data_accumulating_past_the_bound_errors() {
    let mut scanner = Scanner::with_max_event_size(20);
    let events = scan(
        &mut scanner,
        &[b"data: 12345\ndata: 12345\ndata: 12345\n\ndata: ok\n\n"],
    );
    assert_eq!(
        events,
        [
            Err(ScanError::EventTooLarge { limit: 20 }),
            Ok(Event::new("ok"))
        ]
    );
}

#[test]
fn e4_replacement_characters_count_against_the_bound() {
    // 10 invalid bytes become 30 bytes of U+FFFD.
    let mut scanner = Scanner::with_max_event_size(20);
    let events = scan(
        &mut scanner,
        &[b"data:\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\n\n"],
    );
    assert_eq!(events, [Err(ScanError::EventTooLarge { limit: 20 })]);
}

#[test]
fn e4_endless_line_keeps_memory_bounded() {
    let limit = 1024 * 1024;
    let chunk = [b'x'; 4096];
    let mut scanner = Scanner::with_max_event_size(limit);
    scanner.feed(b"data: ");
    let mut errors = 0;
    for _ in 0..(64 * 1024 * 1024 / chunk.len()) {
        scanner.feed(&chunk);
        while let Err(error) = scanner.next_event().map(|event| assert_eq!(event, None)) {
            assert_eq!(error, ScanError::EventTooLarge { limit });
            errors += 1;
        }
        assert!(scanner.buffered_len() <= limit);
        assert!(scanner.buf.capacity() <= 2 * (limit + chunk.len()));
    }
    assert_eq!(errors, 1);
    scanner.feed(b"\n\ndata: after\n\n");
    assert_eq!(scanner.next_event(), Ok(Some(Event::new("after"))));
}

#[test]
fn e4_a_partial_byte_order_mark_is_held_within_the_bound() {
    // Bytes that may open a BOM are not yet bytes of an event: the third byte decides whether
    // they are dropped (E1) or data. The bound holds meanwhile, however small.
    for limit in [0, 1, 2] {
        let mut scanner = Scanner::with_max_event_size(limit);
        for byte in [0xEF, 0xBB] {
            scanner.feed(&[byte]);
            assert_eq!(scanner.next_event(), Ok(None));
            assert!(
                scanner.buffered_len() <= limit,
                "{} bytes held, bound {limit}",
                scanner.buffered_len()
            );
        }
        assert!(scanner.finish(), "the partial mark is dropped at the end");
    }
    // Byte by byte or whole, a mark or data, the outcome is the same.
    let streams: [(usize, &[u8]); 6] = [
        (5, b"\xEF\xBB\xBFdata:\n\n"),
        (0, b"\xEF\xBB\xBF\n\n"),
        (1, b"\xEF\xBBx\n\n"),
        (2, b"\xEF\xBB\n\n"),
        (3, b"\xEF\xBBa\n\ndata\n\n"),
        (8, b"\xEFdata:a\n\n"),
    ];
    for (limit, stream) in streams {
        let whole = scan(&mut Scanner::with_max_event_size(limit), &[stream]);
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        let split = scan(&mut Scanner::with_max_event_size(limit), &bytes);
        assert_eq!(split, whole, "{stream:?} at bound {limit}");
    }
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    assert_eq!(
        datas(&[b"data: \xFF\xC3(\xE2\x82\n\n"]),
        ["\u{FFFD}\u{FFFD}(\u{FFFD}"]
    );
    assert_eq!(datas(&[b"data: \xC3", b"\xA9\n\n"]), ["\u{e9}"]);
}

#[test]
fn empty_event_name_is_the_default() {
    let events = scan(&mut Scanner::new(), &[b"event: x\nevent\ndata: a\n\n"]);
    assert_eq!(events, [Ok(Event::new("a"))]);
}

#[test]
fn finish_resets_for_the_next_stream_keeping_id_and_retry() {
    let mut scanner = Scanner::new();
    scan(&mut scanner, &[b"retry: 10\nid: 3\ndata: a\n\ndata: cut"]);
    let events = scan(&mut scanner, &[b"\xEF\xBB\xBFdata: b\n\n"]);
    assert_eq!(events, [Ok(Event::new("b"))]);
    assert_eq!(scanner.last_event_id(), "3");
    assert_eq!(scanner.retry(), Some(Duration::from_millis(10)));
    assert_eq!(scanner.buffered_len(), 0);
}

#[test]
fn consumed_input_is_compacted() {
    let mut scanner = Scanner::new();
    let event = b"data: 0123456789012345678901234567890123456789\n\n";
    for _ in 0..10_000 {
        scanner.feed(event);
        assert!(scanner.next_event().expect("fits").is_some());
        assert_eq!(scanner.next_event(), Ok(None));
    }
    assert!(scanner.buf.capacity() <= 2 * COMPACT_AT + event.len());
}

#[test]
fn debug_shows_state_not_contents() {
    let mut scanner = Scanner::new();
    scanner.feed(b"data: secret");
    let debug = format!("{scanner:?}");
    assert!(debug.contains("buffered_len: 12"), "{debug}");
    assert!(!debug.contains("secret"), "{debug}");
}
