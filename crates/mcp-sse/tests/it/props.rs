//! Properties: any chunking scans like the whole input, which scans like the reference parser;
//! and encoding then scanning gives the events back.

use std::time::Duration;

use bytes::BytesMut;
use mcp_sse::{Event, Scanner};
use proptest::{prelude::*, sample::Index};

use crate::{Outcome, reference, scan, split_at};

/// Pieces that make interesting streams: field names right and wrong, separators, every line
/// end, a BOM, multi-byte characters, invalid UTF-8, NUL and digits.
const PIECES: &[&[u8]] = &[
    b"data",
    b"id",
    b"event",
    b"retry",
    b"Data",
    b":",
    b" ",
    b"  ",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"\r\n\r\n",
    b"x",
    b"yz",
    b"12",
    b"0",
    b"\xEF\xBB\xBF",
    b"\xC3\xA9",
    b"\xE2\x82\xAC",
    b"\xF0\x9F\x98\x80",
    b"\xFF",
    b"\xC3",
    b"\xE2\x82",
    b"\0",
    b"\t",
    b"data: ",
    b"id: ",
    b"retry: ",
    b"event: ",
];

fn stream_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        prop::collection::vec(prop::sample::select(PIECES), 0..60),
    )
        .prop_map(|(bom, pieces)| {
            let mut bytes = if bom {
                b"\xEF\xBB\xBF".to_vec()
            } else {
                Vec::new()
            };
            pieces
                .iter()
                .for_each(|piece| bytes.extend_from_slice(piece));
            bytes
        })
}

fn cuts(input_len: usize, indexes: &[Index]) -> Vec<usize> {
    indexes
        .iter()
        .map(|index| index.index(input_len + 1))
        .collect()
}

/// Data with every kind of line break among other text.
fn data() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\r".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just(" ".to_owned()),
        "[^\r\n]{0,6}",
    ];
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

fn event() -> impl Strategy<Value = Event> {
    (
        prop::option::of("[^\r\n]{0,6}"),
        prop::option::of("[^\r\n\0]{0,6}"),
        data(),
        prop::option::of(any::<u32>()),
    )
        .prop_map(|(name, id, data, retry)| {
            let mut event = Event::new(data);
            event.name = name;
            event.id = id;
            event.retry = retry.map(|millis| Duration::from_millis(millis.into()));
            event
        })
}

/// What a scanner gives back for an encoded event: line breaks become LF, an empty name is
/// the default type.
fn normalised(event: &Event) -> Event {
    let mut event = event.clone();
    event.data = event.data.replace("\r\n", "\n").replace('\r', "\n");
    event.name = event.name.filter(|name| !name.is_empty());
    event
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn e1_e4_any_chunking_scans_like_the_whole_and_like_the_reference(
        input in stream_bytes(),
        indexes in prop::collection::vec(any::<Index>(), 0..10),
    ) {
        let whole = scan(Scanner::new(), [&input[..]]);
        prop_assert_eq!(&whole, &reference::parse(&input));
        let chunks = split_at(&input, &cuts(input.len(), &indexes));
        prop_assert_eq!(&scan(Scanner::new(), chunks), &whole);
        prop_assert_eq!(&scan(Scanner::new(), input.chunks(1)), &whole);
    }

    #[test]
    fn e4_bounded_outcome_does_not_depend_on_chunking(
        input in stream_bytes(),
        indexes in prop::collection::vec(any::<Index>(), 0..10),
        limit in 0_usize..40,
    ) {
        let whole = scan(Scanner::with_max_event_size(limit), [&input[..]]);
        let chunks = split_at(&input, &cuts(input.len(), &indexes));
        prop_assert_eq!(&scan(Scanner::with_max_event_size(limit), chunks), &whole);
        prop_assert_eq!(&scan(Scanner::with_max_event_size(limit), input.chunks(1)), &whole);
    }

    #[test]
    fn e5_encode_then_scan_gives_the_events_back(
        events in prop::collection::vec(event(), 0..6),
        indexes in prop::collection::vec(any::<Index>(), 0..10),
    ) {
        let mut wire = BytesMut::new();
        for event in &events {
            event.encode(&mut wire).expect("valid event");
        }
        let outcome = scan(Scanner::new(), split_at(&wire, &cuts(wire.len(), &indexes)));
        let expected = Outcome {
            events: events.iter().map(|event| Ok(normalised(event))).collect(),
            last_event_id: events.iter().rev().find_map(|e| e.id.clone()).unwrap_or_default(),
            retry: events.iter().rev().find_map(|e| e.retry),
            dropped: false,
        };
        prop_assert_eq!(outcome, expected);
    }

    #[test]
    fn e5_names_and_ids_with_line_breaks_are_refused_and_write_nothing(
        event in event(),
        bad in "[^\r\n]{0,3}[\r\n\0][^\r\n]{0,3}",
        in_name in any::<bool>(),
    ) {
        let mut event = event;
        if in_name && !bad.contains('\0') {
            event.name = Some(bad);
        } else {
            event.id = Some(bad);
        }
        let mut wire = BytesMut::from(&b"before"[..]);
        prop_assert!(event.encode(&mut wire).is_err());
        prop_assert_eq!(&wire[..], b"before");
    }
}
