//! The span and the duration of each request or notification the client sends: begun when the
//! application sends it, under the caller's current OpenTelemetry context, its context written
//! into `params._meta`; ended when its response is delivered (whichever stream carried it), when
//! the send fails, when the application cancels it, or when the connection closes without one.
//! A notification's span ends at once.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use http::Uri;
use mcp_jsonrpc::{Id, Message, RawValue, Response};
use mcp_streamable_protocol::telemetry::Params;
use opentelemetry::global::BoxedSpan;
use opentelemetry::propagation::Injector;
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue, StringValue};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Telemetry;

/// The `error.type` of a request cancelled by the application, or left unanswered when the
/// connection closed.
pub(crate) const CANCELLED: &str = "cancelled";

/// Where a request went, as the connection knows it when the request's span ends.
#[derive(Debug, Default)]
pub(crate) struct Placement {
    /// `mcp.session.id`: the session-based family only.
    pub(crate) session: Option<String>,
    /// `mcp.protocol.version`, when the connection knows it.
    pub(crate) version: Option<String>,
}

/// The requests of one connection in flight, each with its span.
pub(crate) struct Operations {
    pub(crate) telemetry: Telemetry,
    /// `network.*` and `server.*`: made once, shared by every span.
    peer: Vec<KeyValue>,
    open: Mutex<HashMap<Id, Operation>>,
}

/// One request in flight.
struct Operation {
    span: BoxedSpan,
    started: Instant,
    method: String,
    /// `gen_ai.tool.name` or `gen_ai.prompt.name`.
    target: Option<KeyValue>,
    /// The version the request itself names: `_meta`'s (per-request) or an `initialize`'s.
    declared: Option<String>,
}

/// What a tool's result says of itself.
#[derive(Deserialize)]
struct ToolResult {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

/// The members a propagator writes, gathered before they go into `_meta`.
struct Carrier(Vec<(String, String)>);

impl Injector for Carrier {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

impl Operations {
    pub(crate) fn new(telemetry: &Telemetry, url: &Uri) -> Operations {
        let mut peer = vec![
            KeyValue::new("network.transport", "tcp"),
            KeyValue::new("network.protocol.name", "http"),
        ];
        if let Some(host) = url.host() {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            peer.push(KeyValue::new("server.address", host.to_owned()));
        }
        let port = url.port_u16().or(match url.scheme_str() {
            Some("https") => Some(443),
            _ => Some(80),
        });
        if let Some(port) = port {
            peer.push(KeyValue::new("server.port", i64::from(port)));
        }
        Operations {
            telemetry: telemetry.clone(),
            peer,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn open(&self) -> MutexGuard<'_, HashMap<Id, Operation>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The application sends `message`: a span begins under the caller's current context, and
    /// its context goes into `params._meta`. A notification's span ends at once, placed as
    /// `placement` says.
    pub(crate) fn begin(
        &self,
        message: &mut Message,
        declared: Option<String>,
        placement: impl FnOnce() -> Placement,
    ) {
        let Some(instruments) = self.telemetry.instruments() else {
            return;
        };
        let (method, id, params) = match message {
            Message::Request(r) => (r.method.as_str(), Some(r.id.clone()), &mut r.params),
            Message::Notification(n) => (n.method.as_str(), None, &mut n.params),
            Message::Response(_) => return,
        };
        let read = params.as_deref().map(Params::read).unwrap_or_default();
        let target = match method {
            "tools/call" => Some("gen_ai.tool.name"),
            "prompts/get" => Some("gen_ai.prompt.name"),
            _ => None,
        }
        .zip(read.name.as_deref());
        let name = match target {
            Some((_, target)) => format!("{method} {target}"),
            None => method.to_owned(),
        };
        let target = target.map(|(key, name)| KeyValue::new(key, name.to_owned()));
        // A sampler sees the span's name, kind and parent, and the attributes it starts with:
        // the method and the target, what an operation is sampled by. The others are made only
        // for a span that records (as the server's, SPEC O1).
        let mut sampled_by = Vec::with_capacity(self.peer.len() + 4);
        sampled_by.push(KeyValue::new("mcp.method.name", method.to_owned()));
        sampled_by.extend(target.iter().cloned());
        let tracer = &instruments.tracer;
        let parent = Context::current();
        let mut span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_attributes(sampled_by)
            .start_with_context(tracer, &parent);
        if span.is_recording() {
            span.set_attributes(self.peer.iter().cloned());
            if let Some(id) = &id {
                span.set_attribute(KeyValue::new(
                    "jsonrpc.request.id",
                    StringValue::from(mcp_streamable_protocol::telemetry::request_id(id)),
                ));
            }
            if let Some(uri) = &read.uri {
                span.set_attribute(KeyValue::new("mcp.resource.uri", uri.to_string()));
            }
        }
        let declared = match (method, read.protocol_version) {
            ("initialize", Some(asked)) => Some(asked.into_owned()),
            _ => declared,
        };
        let method = method.to_owned();
        let sent = parent.with_remote_span_context(span.span_context().clone());
        inject(params, &sent);
        let operation = Operation {
            span,
            started: Instant::now(),
            method,
            target,
            declared,
        };
        match id {
            Some(id) => {
                self.open().insert(id, operation);
            }
            None => self.finish(operation, &placement(), None),
        }
    }

    /// A response is delivered: the span of the request it answers, if it is in flight, ends
    /// with what the response says.
    pub(crate) fn answer(&self, response: &Response, placement: impl FnOnce() -> Placement) {
        if !self.telemetry.is_on() {
            return;
        }
        let Some(operation) = response.id().and_then(|id| self.open().remove(id)) else {
            return;
        };
        let failure = match response.result() {
            Err(error) => Some(Failure {
                kind: error.code.to_string(),
                description: error.message.clone(),
                code: Some(error.code.to_string()),
            }),
            Ok(result) if operation.method == "tools/call" => is_tool_error(result),
            Ok(_) => None,
        };
        self.finish(operation, &placement(), failure);
    }

    /// The request `id` will get no response: it was cancelled, or its send failed
    /// (`kind` says which, as `error.type`).
    pub(crate) fn fail(&self, id: &Id, kind: &str, placement: impl FnOnce() -> Placement) {
        if !self.telemetry.is_on() {
            return;
        }
        let Some(operation) = self.open().remove(id) else {
            return;
        };
        let failure = Failure {
            kind: kind.to_owned(),
            description: format!("no response: {kind}"),
            code: None,
        };
        self.finish(operation, &placement(), Some(failure));
    }

    /// The connection closed: requests still unanswered end their spans as cancelled.
    pub(crate) fn unanswered(&self, placement: &Placement) {
        let left: Vec<Operation> = self.open().drain().map(|(_, op)| op).collect();
        for operation in left {
            let failure = Failure {
                kind: CANCELLED.to_owned(),
                description: "the connection closed before the response came".to_owned(),
                code: None,
            };
            self.finish(operation, placement, Some(failure));
        }
    }

    /// Ends `operation`'s span and records its duration.
    fn finish(&self, operation: Operation, placement: &Placement, failure: Option<Failure>) {
        let Operation {
            mut span,
            started,
            method,
            target,
            declared,
        } = operation;
        let mut attributes = Vec::with_capacity(8);
        attributes.push(KeyValue::new("mcp.method.name", method));
        attributes.extend(target);
        attributes.extend(self.peer.iter().take(2).cloned());
        if let Some(version) = placement.version.clone().or(declared) {
            let version = KeyValue::new("mcp.protocol.version", version);
            span.set_attribute(version.clone());
            attributes.push(version);
        }
        if let Some(session) = &placement.session {
            span.set_attribute(KeyValue::new("mcp.session.id", session.clone()));
        }
        if let Some(failure) = failure {
            if let Some(code) = failure.code {
                let status = KeyValue::new("rpc.response.status_code", code);
                span.set_attribute(status.clone());
                attributes.push(status);
            }
            let kind = KeyValue::new("error.type", failure.kind);
            span.set_attribute(kind.clone());
            attributes.push(kind);
            span.set_status(Status::error(failure.description));
        }
        if let Some(instruments) = self.telemetry.instruments() {
            instruments
                .operation_duration
                .record(started.elapsed().as_secs_f64(), &attributes);
        }
        span.end();
    }
}

/// `tool_error` when a tool's result says `isError: true`.
fn is_tool_error(result: &RawValue) -> Option<Failure> {
    // Parsed only when it can say so: most results do not name `isError` at all.
    if !result.get().contains(r#""isError""#) {
        return None;
    }
    serde_json::from_str::<ToolResult>(result.get())
        .ok()
        .filter(|r| r.is_error)
        .map(|_| Failure {
            kind: "tool_error".to_owned(),
            description: "the tool's result is an error".to_owned(),
            code: None,
        })
}

/// Writes the context `sent` into `params._meta` with the global propagator, keeping the
/// members the application put there, and writing none when it put a `traceparent` there.
/// Params that are not an object are left alone; empty values (a `tracestate` with no
/// entries) are not written.
fn inject(params: &mut Option<Box<RawValue>>, sent: &Context) {
    let mut carrier = Carrier(Vec::new());
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(sent, &mut carrier));
    if carrier.0.is_empty() {
        return;
    }
    let mut object: Map<String, Value> = match params.as_deref() {
        None => Map::new(),
        Some(raw) => match serde_json::from_str(raw.get()) {
            Ok(object) => object,
            Err(_) => return,
        },
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    // An application that wrote its own `traceparent` carries its own context: a
    // `tracestate` of ours beside it would belong to another span.
    let Value::Object(meta) = meta else {
        return;
    };
    if meta.contains_key("traceparent") {
        return;
    }
    for (key, value) in carrier.0.into_iter().filter(|(_, v)| !v.is_empty()) {
        meta.entry(key).or_insert(Value::String(value));
    }
    if let Ok(raw) = serde_json::value::to_raw_value(&object) {
        *params = Some(raw);
    }
}

/// How a request failed: its `error.type`, the status's description, and the JSON-RPC code
/// of an error response (`rpc.response.status_code`).
struct Failure {
    kind: String,
    description: String,
    code: Option<String>,
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use serde_json::json;

    use super::*;

    fn sent() -> Context {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let span = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        Context::new().with_remote_span_context(span)
    }

    fn injected(params: Option<Value>) -> Option<Value> {
        let mut params = params.map(|p| serde_json::value::to_raw_value(&p).unwrap());
        inject(&mut params, &sent());
        params.map(|p| serde_json::from_str(p.get()).unwrap())
    }

    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_context_goes_into_meta_beside_the_applications_members() {
        assert_eq!(
            injected(None),
            Some(json!({"_meta": {"traceparent": TRACEPARENT}}))
        );
        assert_eq!(
            injected(Some(json!({"name": "x", "_meta": {"progressToken": 3}}))),
            Some(json!({"name": "x", "_meta": {"progressToken": 3, "traceparent": TRACEPARENT}}))
        );
    }

    #[test]
    fn the_applications_traceparent_and_odd_params_are_kept() {
        let own = json!({"_meta": {"traceparent": "00-mine"}});
        assert_eq!(injected(Some(own.clone())), Some(own));
        assert_eq!(injected(Some(json!([1, 2]))), Some(json!([1, 2])));
        assert_eq!(
            injected(Some(json!({"_meta": 5}))),
            Some(json!({"_meta": 5}))
        );
    }
}
