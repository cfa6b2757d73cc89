//! The row `ours-otlp` (issue 29): a collector's receiving end played by the suite. An OTLP/HTTP
//! sink on loopback that answers every export of `/v1/traces`, `/v1/metrics` and `/v1/logs`
//! with 200 and an empty response (an empty `Export*ServiceResponse` encodes as no bytes), and
//! counts what it received: exports and bytes per signal, and the spans of the protobuf trace
//! exports, found by walking the message's fields without decoding it.
//!
//! It is a hyper HTTP/1.1 server on a `current_thread` runtime of one thread of the suite's
//! own, which pins itself (`taskset -p`) where the load generator runs, CPU 1: its CPU is not
//! the server's, as a collector's would not be.

use std::net::TcpListener as StdListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

/// The CPU the sink's thread is pinned to: the load generator's.
const SINK_CPU: &str = "1";

/// How long to wait when accepting fails (out of file descriptors) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// The exports and bytes of one signal.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Export requests answered.
    pub(crate) exports: u64,
    /// Their bodies' bytes, as sent.
    pub(crate) bytes: u64,
}

/// What the sink has received so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Received {
    /// `POST /v1/traces`.
    pub(crate) traces: Tally,
    /// `POST /v1/metrics`.
    pub(crate) metrics: Tally,
    /// `POST /v1/logs`.
    pub(crate) logs: Tally,
    /// The spans of the trace exports in protobuf (JSON ones are not counted).
    pub(crate) spans: u64,
    /// Requests that were not an export (another method or path): answered 404.
    pub(crate) refused: u64,
}

/// The counters the sink's thread adds to and the suite reads.
#[derive(Debug, Default)]
struct Counters {
    /// Exports and bytes of traces, metrics and logs, in that order.
    signals: [(AtomicU64, AtomicU64); 3],
    spans: AtomicU64,
    refused: AtomicU64,
}

impl Counters {
    fn read(&self) -> Received {
        let tally = |(exports, bytes): &(AtomicU64, AtomicU64)| Tally {
            exports: exports.load(Ordering::Relaxed),
            bytes: bytes.load(Ordering::Relaxed),
        };
        Received {
            traces: tally(&self.signals[0]),
            metrics: tally(&self.signals[1]),
            logs: tally(&self.signals[2]),
            spans: self.spans.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

/// A running sink; stopped (its thread ended) when dropped.
#[derive(Debug)]
pub(crate) struct Sink {
    /// `http://127.0.0.1:PORT`: what `OTEL_EXPORTER_OTLP_ENDPOINT` is set to.
    pub(crate) endpoint: String,
    counters: Arc<Counters>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Sink {
    /// Starts a sink on a loopback port the OS picks, its thread pinned to CPU 1 when `pin`.
    pub(crate) fn start(pin: bool) -> anyhow::Result<Sink> {
        let listener = StdListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let counters = Arc::new(Counters::default());
        let (stop, stopped) = oneshot::channel();
        let (ready, started) = std::sync::mpsc::channel();
        let shared = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name("otlp-sink".to_owned())
            .spawn(move || {
                let runtime = (if pin { pin_this_thread() } else { Ok(()) }).and_then(|()| {
                    Ok(tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?)
                });
                match runtime {
                    Ok(runtime) => {
                        let _ = ready.send(Ok(()));
                        runtime.block_on(serve(listener, shared, stopped));
                    }
                    Err(err) => {
                        let _ = ready.send(Err(err));
                    }
                }
            })?;
        let sink = Sink {
            endpoint,
            counters,
            stop: Some(stop),
            thread: Some(thread),
        };
        started.recv().context("the sink's thread ended")??;
        Ok(sink)
    }

    /// What it has received so far.
    pub(crate) fn received(&self) -> Received {
        self.counters.read()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // The sender dropped, the accept loop returns and the runtime ends its connections.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Pins the calling thread to [`SINK_CPU`] (`taskset -p` on its thread id, read from
/// `/proc/thread-self`).
fn pin_this_thread() -> anyhow::Result<()> {
    let link = std::fs::read_link("/proc/thread-self").context("reading /proc/thread-self")?;
    let tid = link
        .file_name()
        .context("no thread id in /proc/thread-self")?
        .to_owned();
    let status = Command::new("taskset")
        .args(["-p", "-c", SINK_CPU])
        .arg(&tid)
        .stdout(Stdio::null())
        .status()
        .context("running taskset")?;
    if !status.success() {
        bail!("taskset -p -c {SINK_CPU} {tid:?}: {status}");
    }
    Ok(())
}

/// Accepts connections until `stopped`, each served over HTTP/1.1 by [`answer`].
async fn serve(listener: StdListener, counters: Arc<Counters>, mut stopped: oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((tcp, _)) = accepted else {
            tokio::time::sleep(ACCEPT_RETRY).await;
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let counters = Arc::clone(&counters);
        let service = hyper::service::service_fn(move |request| {
            let counters = Arc::clone(&counters);
            async move { answer(request, &counters).await }
        });
        tokio::spawn(
            hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service),
        );
    }
}

/// Counts an export and answers it with an empty response in its own encoding; anything else
/// is counted as refused and answered 404.
async fn answer(
    request: Request<Incoming>,
    counters: &Counters,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let signal = match request.uri().path() {
        "/v1/traces" => Some(0),
        "/v1/metrics" => Some(1),
        "/v1/logs" => Some(2),
        _ => None,
    };
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let Some(signal) = signal.filter(|_| request.method() == Method::POST) else {
        counters.refused.fetch_add(1, Ordering::Relaxed);
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return Ok(response);
    };
    let body = request.into_body().collect().await?.to_bytes();
    let (exports, bytes) = &counters.signals[signal];
    exports.fetch_add(1, Ordering::Relaxed);
    bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
    if signal == 0
        && !json
        && let Some(spans) = spans(&body)
    {
        counters.spans.fetch_add(spans, Ordering::Relaxed);
    }
    let (content_type, empty) = if json {
        ("application/json", Bytes::from_static(b"{}"))
    } else {
        ("application/x-protobuf", Bytes::new())
    };
    let mut response = Response::new(Full::new(empty));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    Ok(response)
}

/// The spans of an `ExportTraceServiceRequest` in protobuf: its `resource_spans` (field 1),
/// their `scope_spans` (2), and those's `spans` (2); `None` if it is malformed.
pub(crate) fn spans(request: &[u8]) -> Option<u64> {
    let mut spans = 0;
    each(request, 1, |resource| {
        each(resource, 2, |scope| {
            each(scope, 2, |_| {
                spans += 1;
                Some(())
            })
        })
    })?;
    Some(spans)
}

/// Calls `found` with each length-delimited field numbered `number` of `message`, in order;
/// `None` if the message, or `found`, finds it malformed. Each step consumes a byte or more.
fn each<'a>(
    message: &'a [u8],
    number: u64,
    mut found: impl FnMut(&'a [u8]) -> Option<()>,
) -> Option<()> {
    let mut rest = message;
    while !rest.is_empty() {
        let (field, value) = next_field(&mut rest)?;
        if field == number {
            found(value?)?;
        }
    }
    Some(())
}

/// The next field of a protobuf message: its number, and its bytes if it is length-delimited;
/// `None` if malformed (or a group, which OTLP never sends).
fn next_field<'a>(bytes: &mut &'a [u8]) -> Option<(u64, Option<&'a [u8]>)> {
    let key = varint(bytes)?;
    let wire = key & 7;
    let length = match wire {
        0 => {
            varint(bytes)?;
            0
        }
        1 => 8,
        2 => usize::try_from(varint(bytes)?).ok()?,
        5 => 4,
        _ => return None,
    };
    let value = bytes.get(..length)?;
    *bytes = &bytes[length..];
    Some((key >> 3, (wire == 2).then_some(value)))
}

/// A base-128 varint, at most ten bytes.
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;

    use super::*;

    /// Field `number` of wire type 2 holding `value` (shorter than 128 bytes).
    fn field(number: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![number << 3 | 2, u8::try_from(value.len()).unwrap()];
        out.extend_from_slice(value);
        out
    }

    /// An export of one resource, its `resource` field and a scope of `count` spans, each
    /// with a name (field 5) and a kind (field 6, a varint).
    fn export(count: usize) -> Vec<u8> {
        let mut span = field(5, b"tools/call echo");
        span.extend([6 << 3, 2]);
        let mut scope = field(1, &field(1, b"mcp-streamable-server"));
        for _ in 0..count {
            scope.extend(field(2, &span));
        }
        let mut resource = field(1, &[]);
        resource.extend(field(2, &scope));
        field(1, &resource)
    }

    #[test]
    fn spans_are_counted_through_resources_and_scopes_and_garbage_is_refused() {
        assert_eq!(spans(&export(3)), Some(3));
        assert_eq!(spans(&[]), Some(0));
        let mut two = export(1);
        two.extend(export(1));
        assert_eq!(spans(&two), Some(2));
        let cut = export(2);
        assert_eq!(spans(&cut[..cut.len() - 1]), None);
        assert_eq!(spans(b"{\"resourceSpans\":[]}"), None);
    }

    /// Sends one HTTP/1.1 request to the sink and reads the whole answer (it closes).
    fn send(sink: &Sink, method: &str, path: &str, body: &[u8]) -> String {
        let addr = sink.endpoint.trim_start_matches("http://");
        let mut tcp = TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            tcp,
            "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/x-protobuf\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        tcp.write_all(body).unwrap();
        let mut answer = Vec::new();
        tcp.read_to_end(&mut answer).unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[test]
    fn the_sink_answers_exports_with_an_empty_200_and_counts_them() {
        let sink = Sink::start(false).unwrap();
        assert!(sink.endpoint.starts_with("http://127.0.0.1:"));
        let body = export(4);
        let answer = send(&sink, "POST", "/v1/traces", &body);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.contains("content-type: application/x-protobuf"),
            "{answer}"
        );
        assert!(answer.contains("content-length: 0"), "{answer}");
        assert!(send(&sink, "POST", "/v1/metrics", b"\x0a\x00").starts_with("HTTP/1.1 200"));
        assert!(send(&sink, "GET", "/v1/traces", &[]).starts_with("HTTP/1.1 404"));
        let received = sink.received();
        assert_eq!(
            received.traces,
            Tally {
                exports: 1,
                bytes: body.len() as u64
            }
        );
        assert_eq!(received.spans, 4);
        assert_eq!(
            received.metrics,
            Tally {
                exports: 1,
                bytes: 2
            }
        );
        assert_eq!((received.logs, received.refused), (Tally::default(), 1));
    }
}
