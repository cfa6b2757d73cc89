//! A 2025-03-26 batch through the server, from bytes in to answers out: the largest batch a
//! 4 MiB body holds (about 95,000 `ping`s, with the batch bound lifted) and one at the default
//! bound (1,000). Every request id is checked against the others and against those in flight;
//! the check is one pass (it once compared each id with every one before it, 3.3 s of CPU for
//! 60,000).

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_server::{
    Config, DEFAULT_MAX_BODY_BYTES, ServerConnection, StreamableHttpService,
};
use mcp_transport::{Connection, Sender};

/// Answers every request with an empty result.
async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    let empty = to_raw_value(&serde_json::json!({})).expect("an empty object");
    while let Ok(Some(message)) = conn.recv().await {
        if let Message::Request(r) = message {
            let _ = sender
                .send(Response::success(r.id, empty.clone()).into())
                .await;
        }
    }
}

/// A batch of `ping`s with distinct ids, as large as fits `max_bytes` or holds `max_count`.
fn batch(max_bytes: usize, max_count: usize) -> Bytes {
    let mut out = String::from("[");
    for id in 0..max_count {
        let ping = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        if out.len() + ping.len() + 2 > max_bytes {
            break;
        }
        if id > 0 {
            out.push(',');
        }
        out.push_str(&ping);
    }
    out.push(']');
    Bytes::from(out)
}

fn post(body: Bytes) -> http::Request<Full<Bytes>> {
    http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-03-26")
        .body(Full::new(body))
        .expect("a valid request")
}

fn batches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let config = Config::default()
        .stateless()
        .json_response(true)
        .max_batch_messages(usize::MAX)
        .incoming_capacity(1024)
        .max_buffered_bytes(64 * 1024 * 1024);
    let service = StreamableHttpService::new(config, app);
    let mut group = c.benchmark_group("batch");
    group.sample_size(10);
    for (name, body) in [
        ("4 MiB", batch(DEFAULT_MAX_BODY_BYTES, usize::MAX)),
        ("1,000", batch(usize::MAX, 1_000)),
    ] {
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let response = service.handle(post(body.clone())).await;
                    assert_eq!(response.status(), 200);
                    black_box(response.into_body().collect().await.expect("the answers"));
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, batches);
criterion_main!(benches);
