//! Driving the service without sockets: requests in, responses and SSE events out.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_jsonrpc::{Body, Id, Message};
use mcp_sse::{Event, Scanner};
use mcp_streamable_server::{Config, ResponseBody, ServerConnection, StreamableHttpService};
use serde_json::{Value, json};

pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// How long a test waits for something that should come at once. Generous: under paused time
/// it is virtual; under real time it only bounds a broken test.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

pub(crate) fn service(config: Config) -> StreamableHttpService {
    StreamableHttpService::new(config, crate::app::session)
}

/// A service whose sessions run `app`.
pub(crate) fn service_with<F, Fut>(config: Config, app: F) -> StreamableHttpService
where
    F: Fn(ServerConnection, http::request::Parts) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    StreamableHttpService::new(config, app)
}

fn base(method: Method) -> http::request::Builder {
    Request::builder()
        .method(method)
        .uri("http://localhost/mcp")
        .header("host", "localhost")
}

/// A POST with the headers a correct client sends.
pub(crate) fn post(session: Option<&str>) -> http::request::Builder {
    let mut b = base(Method::POST)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json");
    if let Some(id) = session {
        b = b.header("mcp-session-id", id);
    }
    b
}

/// A GET for the standalone stream, or a resumption with `last_event_id`.
pub(crate) fn get(session: &str, last_event_id: Option<&str>) -> Request<Full<Bytes>> {
    let mut b = base(Method::GET)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session);
    if let Some(id) = last_event_id {
        b = b.header("last-event-id", id);
    }
    b.body(Full::default()).unwrap()
}

pub(crate) fn delete(session: &str) -> Request<Full<Bytes>> {
    base(Method::DELETE)
        .header("mcp-session-id", session)
        .body(Full::default())
        .unwrap()
}

pub(crate) fn request(
    builder: http::request::Builder,
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    builder.body(Full::new(body.into())).unwrap()
}

pub(crate) fn initialize_body(id: i64, version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string()
}

pub(crate) fn call(id: i64, tool: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string()
}

pub(crate) fn ping(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
}

pub(crate) fn note(method: &str) -> String {
    json!({"jsonrpc": "2.0", "method": method}).to_string()
}

/// Reads a whole non-streaming body.
pub(crate) async fn body_bytes(response: Response<ResponseBody>) -> Bytes {
    tokio::time::timeout(WAIT, response.into_body().collect())
        .await
        .expect("the whole body in time")
        .unwrap()
        .to_bytes()
}

/// An SSE response read event by event.
pub(crate) struct Sse {
    body: ResponseBody,
    scanner: Scanner,
    /// Events scanned by `until_id`, not yet given by `next`.
    pending: std::collections::VecDeque<Event>,
    ended: bool,
    /// Every byte read, comments included.
    pub(crate) raw: Vec<u8>,
}

impl Sse {
    pub(crate) fn new(response: Response<ResponseBody>) -> Sse {
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Sse {
            body: response.into_body(),
            scanner: Scanner::new(),
            pending: Default::default(),
            ended: false,
            raw: Vec::new(),
        }
    }

    /// The next raw frame, `None` at the end of the body; panics after `within`.
    pub(crate) async fn frame_within(&mut self, within: Duration) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        let frame = tokio::time::timeout(within, self.body.frame())
            .await
            .expect("a frame in time");
        match frame {
            None => {
                self.ended = true;
                None
            }
            Some(frame) => {
                let data = frame.unwrap().into_data().unwrap();
                self.raw.extend_from_slice(&data);
                self.scanner.feed(&data);
                Some(data)
            }
        }
    }

    /// The next event carrying a message (priming events are skipped: see `last_event_id`),
    /// or `None` at the end of the body.
    pub(crate) async fn next(&mut self) -> Option<Event> {
        if let Some(event) = self.pending.pop_front() {
            return Some(event);
        }
        // Bounded in time even when keep-alive comments keep coming.
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(event) = self.scanner.next_event().unwrap() {
                // Priming events (an id, empty data) are not messages.
                if !event.data.is_empty() {
                    return Some(event);
                }
                continue;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            self.frame_within(left).await?;
        }
    }

    /// Reads until an event id is known (a priming event's, say), keeping any message read on
    /// the way for `next`; returns that id. Events after it stay unread, whether or not they
    /// came in the same frame.
    pub(crate) async fn until_id(&mut self) -> String {
        for _ in 0..10 {
            if !self.scanner.last_event_id().is_empty() {
                return self.scanner.last_event_id().to_owned();
            }
            while let Some(event) = self.scanner.next_event().unwrap() {
                if !event.data.is_empty() {
                    self.pending.push_back(event);
                }
                if !self.scanner.last_event_id().is_empty() {
                    return self.scanner.last_event_id().to_owned();
                }
            }
            self.frame_within(WAIT).await.expect("an event id");
        }
        panic!("no event id in 10 frames: {:?}", self.raw_text());
    }

    /// Reads until the body ends, at most `max` events.
    pub(crate) async fn rest(&mut self, max: usize) -> Vec<Event> {
        let mut events = Vec::new();
        while events.len() < max {
            let Some(event) = self.next().await else {
                break;
            };
            events.push(event);
        }
        events
    }

    /// Whether the body ends now, with nothing more in it.
    pub(crate) async fn ends(&mut self) -> bool {
        self.next().await.is_none()
    }

    pub(crate) fn last_event_id(&self) -> &str {
        self.scanner.last_event_id()
    }

    pub(crate) fn retry(&self) -> Option<Duration> {
        self.scanner.retry()
    }

    pub(crate) fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }
}

/// Reads SSE events from a response until the body ends, at most `max` events.
pub(crate) async fn sse_events(response: Response<ResponseBody>, max: usize) -> Vec<Event> {
    Sse::new(response).rest(max).await
}

pub(crate) fn message(event: &Event) -> Message {
    match mcp_jsonrpc::parse(event.data.as_bytes()).unwrap() {
        Body::Single(m) => m,
        Body::Batch(_) => panic!("batch in an event"),
    }
}

/// The JSON-RPC messages of SSE events.
pub(crate) fn messages(events: &[Event]) -> Vec<Message> {
    events.iter().map(message).collect()
}

pub(crate) fn result_of(message: &Message) -> Value {
    match message {
        Message::Response(r) => serde_json::from_str(r.result().expect("a result").get()).unwrap(),
        other => panic!("not a response: {other:?}"),
    }
}

/// The response id of a message, if it is one.
pub(crate) fn response_id(message: &Message) -> Option<Id> {
    match message {
        Message::Response(r) => r.id().cloned(),
        _ => None,
    }
}

/// The `progress` field of a progress notification.
pub(crate) fn progress_of(message: &Message) -> Option<u64> {
    match message {
        Message::Notification(n) if n.method == "notifications/progress" => {
            n.parse_params::<Value>().ok()?["progress"].as_u64()
        }
        _ => None,
    }
}

/// A short label for a message, to compare sequences: `p3` (progress 3), `r7` (response to
/// 7), `n:method`, `q:method` (a request).
pub(crate) fn label(message: &Message) -> String {
    if let Some(p) = progress_of(message) {
        return format!("p{p}");
    }
    match message {
        Message::Response(r) => format!("r{}", r.id().map_or("null".into(), |i| i.to_string())),
        Message::Notification(n) => format!("n:{}", n.method),
        Message::Request(r) => format!("q:{}", r.method),
    }
}

/// Starts a session; returns its id.
pub(crate) async fn initialize(service: &StreamableHttpService, version: &str) -> String {
    let response = service
        .handle(request(post(None), initialize_body(0, version)))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let id = session_id(response.headers()).expect("a session id");
    let msgs = if response.headers()["content-type"] == "application/json" {
        mcp_jsonrpc::parse(&body_bytes(response).await)
            .unwrap()
            .into_messages()
    } else {
        messages(&sse_events(response, 10).await)
    };
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(result_of(&msgs[0])["protocolVersion"], version);
    let initialized = service
        .handle(request(post(Some(&id)), note("notifications/initialized")))
        .await;
    assert_eq!(initialized.status(), StatusCode::ACCEPTED);
    id
}

/// Calls a tool and reads its SSE answer to the end: the messages, in order.
pub(crate) async fn call_tool(
    service: &StreamableHttpService,
    session: &str,
    id: i64,
    tool: &str,
    arguments: Value,
) -> Vec<Message> {
    let response = service
        .handle(request(post(Some(session)), call(id, tool, arguments)))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    messages(&sse_events(response, 100_000).await)
}

pub(crate) fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned())
}

/// A refusal, checked for S21: its status, and a body that is a JSON-RPC error response with
/// a message a person can act on. Returns the error's code, id and message.
pub(crate) async fn refusal(
    response: Response<ResponseBody>,
    status: StatusCode,
) -> (i64, Option<Id>, String) {
    assert_eq!(response.status(), status);
    assert_eq!(response.headers()["content-type"], "application/json");
    let bytes = body_bytes(response).await;
    let message = match mcp_jsonrpc::parse(&bytes) {
        Ok(Body::Single(m)) => m,
        other => panic!("not one JSON-RPC message: {other:?}: {bytes:?}"),
    };
    let Message::Response(r) = message else {
        panic!("not a response: {bytes:?}");
    };
    let (id, result) = r.into_parts();
    let error = result.expect_err("an error response");
    assert!(!error.message.trim().is_empty(), "empty message: {bytes:?}");
    (error.code, id, error.message)
}

/// The params of a request or notification, as JSON.
pub(crate) fn params_of(message: &Message) -> Value {
    match message {
        Message::Notification(n) => n.parse_params().unwrap(),
        Message::Request(r) => r.parse_params().unwrap(),
        Message::Response(_) => panic!("a response has no params: {message:?}"),
    }
}

/// `builder` with header `name` set to `value` alone, replacing what was there.
pub(crate) fn with(
    mut builder: http::request::Builder,
    name: &'static str,
    value: &str,
) -> http::request::Builder {
    builder
        .headers_mut()
        .unwrap()
        .insert(name, value.parse().unwrap());
    builder
}
