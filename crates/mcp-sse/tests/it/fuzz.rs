//! The differential fuzzer: the scanner, fed generated streams in arbitrary chunks, against the
//! plain readings of the WHATWG steps (`reference.rs`), unbounded and bounded; and the bound
//! itself (E4) as an invariant checked after every drain.
//!
//! `cargo test` runs a short round; `cargo xtask fuzz` a long one (`MCP_FUZZ_CASES`,
//! `MCP_FUZZ_SECONDS`), in an optimised build that keeps overflow checks.

use std::{fmt::Debug, time::Duration, time::Instant};

use mcp_sse::{ScanError, Scanner};
use proptest::{
    prelude::*,
    sample::Index,
    test_runner::{Config, TestCaseError, TestRunner},
};

use crate::{Outcome, reference, split_at};

/// Cases per target in a plain `cargo test`: a second or two on a slow machine.
const DEFAULT_CASES: u32 = 1_000;

/// How long a run is: a count of cases, or a time to keep going for.
enum Budget {
    Cases(u32),
    Seconds(Duration),
}

impl Budget {
    fn from_env() -> Budget {
        let number = |name| {
            std::env::var(name).ok().map(|value: String| {
                value
                    .parse::<u32>()
                    .unwrap_or_else(|_| panic!("{name}={value:?} is not a count"))
            })
        };
        match (number("MCP_FUZZ_SECONDS"), number("MCP_FUZZ_CASES")) {
            (Some(seconds), _) => Budget::Seconds(Duration::from_secs(seconds.into())),
            (None, cases) => Budget::Cases(cases.unwrap_or(DEFAULT_CASES)),
        }
    }
}

/// Runs `test` on values of `strategy` for the budget the environment asks for; a failure
/// panics with the smallest input proptest could shrink it to.
fn run<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: Debug,
{
    let budget = Budget::from_env();
    let started = Instant::now();
    let mut ran = 0_u64;
    loop {
        let cases = match budget {
            Budget::Cases(cases) => cases,
            Budget::Seconds(_) => 2_000,
        };
        // A fresh seed each round; the failing input is printed, so nothing is persisted.
        let config = Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        };
        if let Err(error) = TestRunner::new(config).run(&strategy, &test) {
            panic!("{name}: {error}");
        }
        ran += u64::from(cases);
        match budget {
            Budget::Seconds(limit) if started.elapsed() < limit => {}
            _ => break,
        }
    }
    eprintln!("fuzz {name}: {ran} cases in {:.1?}", started.elapsed());
}

/// A stream: field lines, right and wrong, with every line end, among stray bytes; values
/// hold multi-byte characters, invalid UTF-8 (which grows when decoded) and NUL.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let field = prop::sample::select(vec![
        &b"data"[..],
        b"id",
        b"event",
        b"retry",
        b"Data",
        b"",
        b":",
        b"data ",
        b"\xEF\xBB\xBFid",
    ]);
    let separator = prop::sample::select(vec![&b":"[..], b": ", b":  ", b""]);
    let piece = prop::sample::select(vec![
        &b"x"[..],
        b"yz",
        b"12",
        b"0",
        b" ",
        b":",
        b"\xC3\xA9",
        b"\xE2\x82\xAC",
        b"\xF0\x9F\x98\x80",
        b"\xFF",
        b"\xFF\xFF\xFF\xFF",
        b"\xC3",
        b"\xE2\x82",
        b"\xED\xA0\x80",
        b"\0",
        b"\t",
        b"\xEF\xBB\xBF",
    ]);
    let end = prop::sample::select(vec![&b"\n"[..], b"\r", b"\r\n", b"\n\n", b"\r\n\r\n", b""]);
    let line = (field, separator, prop::collection::vec(piece, 0..6), end).prop_map(
        |(field, separator, pieces, end)| {
            let mut line = [field, separator].concat();
            pieces
                .iter()
                .for_each(|piece| line.extend_from_slice(piece));
            line.extend_from_slice(end);
            line
        },
    );
    (any::<bool>(), prop::collection::vec(line, 0..24)).prop_map(|(bom, lines)| {
        let mut bytes = if bom {
            b"\xEF\xBB\xBF".to_vec()
        } else {
            Vec::new()
        };
        lines.iter().for_each(|line| bytes.extend_from_slice(line));
        bytes
    })
}

fn chunks(input: &[u8], indexes: &[Index]) -> Vec<Vec<u8>> {
    let cuts: Vec<usize> = indexes.iter().map(|i| i.index(input.len() + 1)).collect();
    split_at(input, &cuts)
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect()
}

/// Scans `chunks` as `crate::scan` does, checking after every drain that the scanner holds no
/// more than its bound and reports no longer an id.
fn scan_within_bound(limit: usize, chunks: &[Vec<u8>]) -> Result<Outcome, TestCaseError> {
    let mut scanner = Scanner::with_max_event_size(limit);
    let mut events = Vec::new();
    for chunk in chunks {
        scanner.feed(chunk);
        loop {
            match scanner.next_event() {
                Ok(Some(event)) => events.push(Ok(event)),
                Ok(None) => break,
                Err(error) => events.push(Err(error)),
            }
        }
        prop_assert!(
            scanner.buffered_len() <= limit,
            "{} bytes held, bound {limit}",
            scanner.buffered_len()
        );
        prop_assert!(scanner.last_event_id().len() <= limit);
    }
    for event in events.iter().flatten() {
        let name = event.name.as_ref().map_or(0, String::len);
        let id = event.id.as_ref().map_or(0, String::len);
        prop_assert!(
            event.data.len() + name + id <= limit,
            "{event:?}, bound {limit}"
        );
    }
    let dropped = scanner.finish();
    prop_assert_eq!(scanner.buffered_len(), 0);
    Ok(Outcome {
        events,
        last_event_id: scanner.last_event_id().to_owned(),
        retry: scanner.retry(),
        dropped,
    })
}

#[test]
fn fuzz_any_chunking_scans_like_the_whatwg_steps() {
    let strategy = (stream(), prop::collection::vec(any::<Index>(), 0..12));
    run("whatwg", strategy, |(input, indexes)| {
        let unbounded = 4 * input.len() + 16;
        let outcome = scan_within_bound(unbounded, &chunks(&input, &indexes))?;
        prop_assert_eq!(&outcome, &reference::parse(&input));
        // With room to spare, the bounded reading is the plain one: a check of the reference.
        prop_assert_eq!(&reference::parse_bounded(&input, unbounded), &outcome);
        Ok(())
    });
}

#[test]
fn fuzz_any_chunking_keeps_the_bound_as_documented() {
    let strategy = (
        stream(),
        prop::collection::vec(any::<Index>(), 0..12),
        0_usize..48,
    );
    run("bounded", strategy, |(input, indexes, limit)| {
        let outcome = scan_within_bound(limit, &chunks(&input, &indexes))?;
        prop_assert_eq!(&outcome, &reference::parse_bounded(&input, limit));
        let expected = ScanError::EventTooLarge { limit };
        for event in &outcome.events {
            prop_assert!(event.as_ref().err().is_none_or(|error| *error == expected));
        }
        Ok(())
    });
}
