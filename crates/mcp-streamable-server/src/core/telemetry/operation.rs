//! The span and the duration of each request or notification a session serves: begun when its
//! POST delivers it, ended when the application's response to it reaches the transport (which
//! stream then carries it does not matter: a POST's, a resumed one, another node's relay), or
//! when the session ends without one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mcp_jsonrpc::{Body, Id, Message, Response};
use opentelemetry::global::BoxedSpan;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{Link, Span, SpanContext, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde::Deserialize;

use crate::core::owner::PeerAddr;
use crate::core::telemetry::{Telemetry, end, span_name};

/// The `error.type` of a request the session ended before it was answered.
const UNANSWERED: &str = "cancelled";

/// The requests of one session in flight, each with its span.
pub(crate) struct Operations {
    telemetry: Telemetry,
    /// `mcp.session.id`: for the session-based family only.
    session: Option<Arc<str>>,
    open: Mutex<HashMap<Id, Operation>>,
}

/// One request in flight.
pub(crate) struct Operation {
    span: BoxedSpan,
    started: Instant,
    /// The attributes of its duration.
    attributes: Vec<KeyValue>,
    /// A `tools/call`, whose result says `isError`.
    tool_call: bool,
}

/// What `params` of a request says that a span records.
#[derive(Deserialize, Default)]
struct Params {
    name: Option<String>,
    uri: Option<String>,
    /// An `initialize`'s: the version its session will speak is not settled yet.
    #[serde(rename = "protocolVersion")]
    protocol_version: Option<String>,
    #[serde(rename = "_meta")]
    meta: Option<HashMap<String, serde_json::Value>>,
}

/// What a tool's result says of itself.
#[derive(Deserialize)]
struct ToolResult {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

/// `_meta`'s string members, as a propagator reads them (`traceparent`, `tracestate`,
/// `baggage`: the unprefixed keys the MCP conventions reserve).
struct MetaCarrier<'a>(&'a HashMap<String, serde_json::Value>);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(serde_json::Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// An HTTP request's headers, as a propagator reads them.
struct HeaderCarrier<'a>(&'a http::HeaderMap);

impl Extractor for HeaderCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// What every message of one POST shares: the HTTP request's span, to link to, and the
/// connection's attributes.
struct Carried {
    http_span: Option<SpanContext>,
    network: Vec<KeyValue>,
    client: Vec<KeyValue>,
}

impl Carried {
    fn of(parts: &http::request::Parts) -> Carried {
        // The HTTP request's own span: a context an instrumenting layer put in the request's
        // extensions, else the one its headers carry. Kept apart from the MCP request's
        // parent: one MCP request may span several HTTP requests (resumption).
        let http_span = match parts.extensions.get::<Context>() {
            Some(cx) => Some(cx.span().span_context().clone()),
            None => opentelemetry::global::get_text_map_propagator(|p| {
                Some(
                    p.extract(&HeaderCarrier(&parts.headers))
                        .span()
                        .span_context()
                        .clone(),
                )
            }),
        }
        .filter(SpanContext::is_valid);
        let version = match parts.version {
            http::Version::HTTP_2 => "2",
            http::Version::HTTP_3 => "3",
            http::Version::HTTP_10 => "1.0",
            _ => "1.1",
        };
        let network = vec![
            KeyValue::new("network.transport", "tcp"),
            KeyValue::new("network.protocol.name", "http"),
            KeyValue::new("network.protocol.version", version),
        ];
        let client = parts
            .extensions
            .get::<PeerAddr>()
            .map(|PeerAddr(addr)| {
                vec![
                    KeyValue::new("client.address", addr.ip().to_string()),
                    KeyValue::new("client.port", i64::from(addr.port())),
                ]
            })
            .unwrap_or_default();
        Carried {
            http_span,
            network,
            client,
        }
    }
}

impl Operations {
    pub(crate) fn new(telemetry: &Telemetry, session: Option<Arc<str>>) -> Operations {
        Operations {
            telemetry: telemetry.clone(),
            session,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Operation>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The messages of a POST are delivered: a span for each request, ended with its
    /// response, and one for each notification, ended at once (its acknowledgement is the
    /// POST's 202). `version` is the protocol version the session speaks.
    pub(crate) fn begin(&self, body: &Body, parts: &http::request::Parts, version: &str) {
        let carried = Carried::of(parts);
        for message in body.messages() {
            let (method, id, params) = match message {
                Message::Request(r) => (r.method.as_str(), Some(&r.id), r.params.as_deref()),
                Message::Notification(n) => (n.method.as_str(), None, n.params.as_deref()),
                Message::Response(_) => continue,
            };
            let params: Params = params
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or_default();
            let operation = self.start(method, id, &params, &carried, version);
            match id {
                Some(id) => {
                    self.open().insert(id.clone(), operation);
                }
                None => self.finish(operation, None),
            }
        }
    }

    fn start(
        &self,
        method: &str,
        id: Option<&Id>,
        params: &Params,
        carried: &Carried,
        version: &str,
    ) -> Operation {
        let inner = &self.telemetry.inner;
        let version = match (method, &params.protocol_version) {
            ("initialize", Some(asked)) => asked.as_str(),
            _ => version,
        };
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", method.to_owned()),
            KeyValue::new("mcp.protocol.version", version.to_owned()),
        ];
        attributes.extend(carried.network.iter().cloned());
        let target = match method {
            "tools/call" => Some("gen_ai.tool.name"),
            "prompts/get" => Some("gen_ai.prompt.name"),
            _ => None,
        }
        .zip(params.name.as_deref());
        if let Some((key, name)) = target {
            attributes.push(KeyValue::new(key, name.to_owned()));
        }
        let mut span_attributes = attributes.clone();
        if let Some(id) = id {
            span_attributes.push(KeyValue::new("jsonrpc.request.id", id.to_string()));
        }
        if let Some(uri) = &params.uri {
            span_attributes.push(KeyValue::new("mcp.resource.uri", uri.clone()));
        }
        if let Some(session) = &self.session {
            span_attributes.push(KeyValue::new("mcp.session.id", session.to_string()));
        }
        span_attributes.extend(carried.client.iter().cloned());
        let parent = match &params.meta {
            Some(meta) => opentelemetry::global::get_text_map_propagator(|p| {
                p.extract_with_context(&Context::new(), &MetaCarrier(meta))
            }),
            None => Context::new(),
        };
        let links = carried
            .http_span
            .iter()
            .map(|cx| Link::with_context(cx.clone()))
            .collect();
        let span = inner
            .tracer
            .span_builder(span_name(method, target.map(|(_, name)| name)))
            .with_kind(SpanKind::Server)
            .with_attributes(span_attributes)
            .with_links(links)
            .start_with_context(&inner.tracer, &parent);
        Operation {
            span,
            started: Instant::now(),
            attributes,
            tool_call: method == "tools/call",
        }
    }

    /// The request `response` answers, if it is in flight: taken under the session's lock, in
    /// the same critical section as the response's routing, and ended after it
    /// ([`answer`](Self::answer)), so that no exporter runs under the lock.
    pub(crate) fn take(&self, response: &Response) -> Option<Operation> {
        self.open().remove(response.id()?)
    }

    /// The application answered: the request's span ends with what the answer says.
    pub(crate) fn answer(&self, operation: Operation, response: &Response) {
        let failure = match response.result() {
            Err(error) => Some(Failure {
                kind: error.code.to_string(),
                description: error.message.clone(),
                code: Some(error.code.to_string()),
            }),
            Ok(result) if operation.tool_call => serde_json::from_str::<ToolResult>(result.get())
                .ok()
                .filter(|r| r.is_error)
                .map(|_| Failure {
                    kind: "tool_error".into(),
                    description: "the tool's result is an error".into(),
                    code: None,
                }),
            Ok(_) => None,
        };
        self.finish(operation, failure);
    }

    /// The session ended: requests still unanswered end their spans as cancelled.
    pub(crate) fn unanswered(&self) {
        let left: Vec<Operation> = self.open().drain().map(|(_, op)| op).collect();
        for operation in left {
            let failure = Failure {
                kind: UNANSWERED.into(),
                description: "the session ended before the request was answered".into(),
                code: None,
            };
            self.finish(operation, Some(failure));
        }
    }

    /// Ends `operation`'s span and records its duration.
    fn finish(&self, operation: Operation, failure: Option<Failure>) {
        let Operation {
            mut span,
            started,
            mut attributes,
            ..
        } = operation;
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
        self.telemetry
            .inner
            .operation_duration
            .record(started.elapsed().as_secs_f64(), &attributes);
        end(span);
    }
}

/// How a request failed: its `error.type`, the status's description, and the JSON-RPC code
/// of an error response (`rpc.response.status_code`).
struct Failure {
    kind: String,
    description: String,
    code: Option<String>,
}
