//! SSE encoding and scanning.
//!
//! Inputs: 10,000 small events (a JSON-RPC notification of about 100 bytes, id `0_N`), encoded
//! and then scanned in 4 KiB chunks; and one event of 1 MiB of data, as a single line and as
//! lines of 100 bytes, scanned in 4 KiB and in 16-byte chunks. The 16-byte runs show the cost of
//! small reads, which must stay within 3x of the 4 KiB runs.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcp_sse::{EventRef, Scanner};

const SMALL_EVENTS: usize = 10_000;
const MIB: usize = 1024 * 1024;

/// Ids and JSON data of the small events.
fn small_events() -> Vec<(String, String)> {
    (0..SMALL_EVENTS)
        .map(|n| {
            let data = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t","progress":{n:05}}}}}"#
            );
            (format!("0_{n}"), data)
        })
        .collect()
}

fn encode_all(events: &[(String, String)], buf: &mut BytesMut) {
    for (id, data) in events {
        let event = EventRef {
            id: Some(id),
            data,
            ..EventRef::default()
        };
        event.encode(buf).expect("valid event");
    }
}

/// Scans `input` fed in chunks of `chunk` bytes with a fresh scanner, as for one response body;
/// returns the bytes of data delivered.
fn scan(input: &[u8], chunk: usize) -> usize {
    let mut scanner = Scanner::new();
    let mut delivered = 0;
    for piece in input.chunks(chunk) {
        scanner.feed(piece);
        loop {
            match scanner.next_event() {
                Ok(Some(event)) => delivered += black_box(event).data.len(),
                Ok(None) => break,
                Err(error) => panic!("{error}"),
            }
        }
    }
    scanner.finish();
    delivered
}

fn small(c: &mut Criterion) {
    let events = small_events();
    let mut wire = BytesMut::new();
    encode_all(&events, &mut wire);
    let mut group = c.benchmark_group("sse_10k_events");
    group.throughput(Throughput::Bytes(wire.len() as u64));
    group.bench_function("encode", |b| {
        let mut buf = BytesMut::with_capacity(wire.len());
        b.iter(|| {
            buf.clear();
            encode_all(black_box(&events), &mut buf);
            black_box(buf.len())
        });
    });
    group.bench_function("scan_4KiB_chunks", |b| {
        b.iter(|| scan(black_box(&wire), 4096));
    });
    group.finish();
}

/// One event of 1 MiB of data: one line, or lines of 100 bytes.
fn big_event(line_len: usize) -> Vec<u8> {
    let mut wire = BytesMut::new();
    let line = "x".repeat(line_len - 1) + "\n";
    let data = line.repeat(MIB / line_len + 1);
    let data = &data[..MIB];
    EventRef::new(data).encode(&mut wire).expect("valid event");
    wire.to_vec()
}

fn big(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse_1MiB_event");
    for (shape, line_len) in [("one_line", MIB), ("100B_lines", 100)] {
        let wire = big_event(line_len);
        group.throughput(Throughput::Bytes(wire.len() as u64));
        for (chunks, chunk) in [("4KiB_chunks", 4096), ("16B_chunks", 16)] {
            group.bench_with_input(BenchmarkId::new(shape, chunks), &wire, |b, wire| {
                b.iter(|| scan(black_box(wire), chunk));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, small, big);
criterion_main!(benches);
