//! JSON-RPC parsing and encoding, beside `serde_json::Value` as the baseline on the same bytes.
//!
//! Inputs: a small `tools/call` request, a 64 KiB `tools/call` result and a batch of 100
//! requests. Each group measures `mcp_jsonrpc::parse`, `serde_json::from_slice::<Value>` and
//! encoding the parsed message back to bytes.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_jsonrpc::{Body, parse};

fn small_request() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"},"_meta":{"progressToken":7}}}"#
        .to_vec()
}

/// A `tools/call` result of about 64 KiB: text content blocks with structured content beside
/// them, the shape real tool results have.
fn large_result() -> Vec<u8> {
    let line = "The quick brown fox jumps over the lazy dog, \\\"quoted\\\" and \\u00e9scaped. ";
    let mut items = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < 64 * 1024 {
        let item = format!(
            r#"{{"type":"text","text":"{}","annotations":{{"priority":{}.5,"audience":["user","assistant"]}}}}"#,
            line.repeat(4),
            i % 10
        );
        size += item.len();
        items.push(item);
        i += 1;
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":"req-1","result":{{"content":[{}],"isError":false}}}}"#,
        items.join(",")
    )
    .into_bytes()
}

fn batch_of_100() -> Vec<u8> {
    let items: Vec<String> = (0..100)
        .map(|i| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"message {i}"}}}}}}"#
            )
        })
        .collect();
    format!("[{}]", items.join(",")).into_bytes()
}

fn bench_input(c: &mut Criterion, name: &str, bytes: &[u8]) {
    let mut group = c.benchmark_group(format!("jsonrpc/{name}"));
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("parse", |b| b.iter(|| parse(black_box(bytes)).unwrap()));
    group.bench_function("baseline_value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(bytes)).unwrap())
    });
    let body: Body = parse(bytes).unwrap();
    let mut buf = Vec::with_capacity(bytes.len() + 64);
    group.bench_function("encode", |b| {
        b.iter(|| {
            buf.clear();
            black_box(&body).encode(&mut buf);
            black_box(buf.len())
        })
    });
    let value: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    group.bench_function("baseline_value_encode", |b| {
        b.iter(|| {
            buf.clear();
            serde_json::to_writer(&mut buf, black_box(&value)).unwrap();
            black_box(buf.len())
        })
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    bench_input(c, "small_request", &small_request());
    bench_input(c, "result_64k", &large_result());
    bench_input(c, "batch_100", &batch_of_100());
}

criterion_group!(jsonrpc, benches);
criterion_main!(jsonrpc);
