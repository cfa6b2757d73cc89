//! The integration tests of `mcp-sse`: fixture streams, split-anywhere and round-trip
//! properties checked against a plain reference parser, the size bound, the stream adapter, and
//! the differential fuzzer.

mod fixtures;
mod fuzz;
mod limits;
mod props;
mod reference;
mod stream;

use mcp_sse::{Event, ScanError, Scanner};

/// What scanning one stream gives: the events (or errors) in order and the state at the end.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    events: Vec<Result<Event, ScanError>>,
    last_event_id: String,
    retry: Option<std::time::Duration>,
    dropped: bool,
}

/// Scans `chunks` with `scanner`, draining after each chunk, then finishes the stream.
fn scan<'a>(mut scanner: Scanner, chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
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
    }
    let dropped = scanner.finish();
    Outcome {
        events,
        last_event_id: scanner.last_event_id().to_owned(),
        retry: scanner.retry(),
        dropped,
    }
}

/// `input` cut at `cuts` (positions in any order, repeats allowed).
fn split_at<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&cut| cut.min(input.len())).collect();
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for cut in cuts {
        chunks.push(&input[from..cut]);
        from = cut;
    }
    chunks.push(&input[from..]);
    chunks
}
