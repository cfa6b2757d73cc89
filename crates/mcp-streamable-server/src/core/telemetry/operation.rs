//! The span and the duration of each request or notification a session serves: begun when its
//! POST delivers it, ended when the application's response to it reaches the transport (which
//! stream then carries it does not matter: a POST's, a resumed one, another node's relay), or
//! when the session ends without one.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mcp_jsonrpc::{Body, Id, Message, Response};
use opentelemetry::global::BoxedSpan;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{Span, SpanContext, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue, StringValue};
use serde::Deserialize;

use crate::core::owner::PeerAddr;
use crate::core::telemetry::{Instruments, Telemetry, end};
use crate::protocol::ProtocolVersion;
use mcp_streamable_protocol::telemetry::{Params, request_id};

/// The `error.type` of a request the session ended before it was answered.
const UNANSWERED: &str = "cancelled";

/// The requests of one session in flight, each with its span.
pub(crate) struct Operations {
    telemetry: Telemetry,
    /// `mcp.session.id`: for the session-based family only; made once, shared by every span.
    session: Option<KeyValue>,
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

/// What a tool's result says of itself.
#[derive(Deserialize)]
struct ToolResult {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

/// `_meta`'s string members, as a propagator reads them (`traceparent`, `tracestate`,
/// `baggage`: the unprefixed keys the MCP conventions reserve).
struct MetaCarrier<'a>(&'a [(&'a str, &'a str)]);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| *k).collect()
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

/// What every message of one POST shares: the connection's attributes, and what only a
/// recorded span keeps (the HTTP request's span, to link to, and the client's address), read
/// from the request when the first such span asks.
struct Carried<'a> {
    parts: &'a http::request::Parts,
    network: [KeyValue; 3],
    http_span: OnceCell<Option<SpanContext>>,
    client: OnceCell<Option<[KeyValue; 2]>>,
}

impl<'a> Carried<'a> {
    fn of(parts: &'a http::request::Parts) -> Carried<'a> {
        let version = match parts.version {
            http::Version::HTTP_2 => "2",
            http::Version::HTTP_3 => "3",
            http::Version::HTTP_10 => "1.0",
            _ => "1.1",
        };
        let network = [
            KeyValue::new("network.transport", "tcp"),
            KeyValue::new("network.protocol.name", "http"),
            KeyValue::new("network.protocol.version", version),
        ];
        Carried {
            parts,
            network,
            http_span: OnceCell::new(),
            client: OnceCell::new(),
        }
    }

    /// The HTTP request's own span: a context an instrumenting layer put in the request's
    /// extensions, else the one its headers carry. Kept apart from the MCP request's parent:
    /// one MCP request may span several HTTP requests (resumption).
    fn http_span(&self) -> Option<&SpanContext> {
        self.http_span
            .get_or_init(|| {
                match self.parts.extensions.get::<Context>() {
                    Some(cx) => Some(cx.span().span_context().clone()),
                    None => opentelemetry::global::get_text_map_propagator(|p| {
                        Some(
                            p.extract(&HeaderCarrier(&self.parts.headers))
                                .span()
                                .span_context()
                                .clone(),
                        )
                    }),
                }
                .filter(SpanContext::is_valid)
            })
            .as_ref()
    }

    /// `client.address` and `client.port`: one copy of the address for the POST's messages,
    /// however many they are.
    fn client(&self) -> Option<&[KeyValue; 2]> {
        self.client
            .get_or_init(|| {
                self.parts
                    .extensions
                    .get::<PeerAddr>()
                    .map(|PeerAddr(addr)| {
                        [
                            KeyValue::new(
                                "client.address",
                                Arc::<str>::from(addr.ip().to_string()),
                            ),
                            KeyValue::new("client.port", i64::from(addr.port())),
                        ]
                    })
            })
            .as_ref()
    }
}

impl Operations {
    pub(crate) fn new(telemetry: &Telemetry, session: Option<Arc<str>>) -> Operations {
        Operations {
            telemetry: telemetry.clone(),
            session: session.map(|id| KeyValue::new("mcp.session.id", id)),
            open: Mutex::new(HashMap::new()),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Operation>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The messages of a POST are delivered: a span for each request, ended with its
    /// response, and one for each notification, ended at once (its acknowledgement is the
    /// POST's 202). `version` is the protocol version the session speaks.
    pub(crate) fn begin(&self, body: &Body, parts: &http::request::Parts, version: &'static str) {
        let Some(inner) = &self.telemetry.inner else {
            return;
        };
        let carried = Carried::of(parts);
        for message in body.messages() {
            let (method, id, params) = match message {
                Message::Request(r) => (r.method.as_str(), Some(&r.id), r.params.as_deref()),
                Message::Notification(n) => (n.method.as_str(), None, n.params.as_deref()),
                Message::Response(_) => continue,
            };
            let params = params.map(Params::read).unwrap_or_default();
            let operation = self.start(inner, method, id, &params, &carried, version);
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
        inner: &Instruments,
        method: &str,
        id: Option<&Id>,
        params: &Params<'_>,
        carried: &Carried<'_>,
        version: &'static str,
    ) -> Operation {
        let version = match (method, &params.protocol_version) {
            ("initialize", Some(asked)) => known_version(asked),
            _ => StringValue::from(version),
        };
        let method = known_method(method);
        let target = match &*method {
            "tools/call" => Some("gen_ai.tool.name"),
            "prompts/get" => Some("gen_ai.prompt.name"),
            _ => None,
        }
        .zip(params.name.as_deref());
        let name = span_name(method.clone(), target.map(|(_, name)| name));
        let tool_call = method == "tools/call";
        let method = KeyValue::new("mcp.method.name", value(method));
        let target = target.map(|(key, name)| KeyValue::new(key, Arc::<str>::from(name)));
        let version = KeyValue::new("mcp.protocol.version", version);
        // A sampler sees the span's name, kind and parent, and the attributes it starts with:
        // the method and the target, what an operation is sampled by. What only a recorded
        // span keeps is made only for one, so that a request the sampler drops copies none of it.
        let mut sampled_by = Vec::with_capacity(SPAN_ATTRIBUTES);
        sampled_by.push(method.clone());
        sampled_by.extend(target.clone());
        let parent = params.meta.map_or_else(Context::new, parent_of);
        let mut span = inner
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(sampled_by)
            .start_with_context(&inner.tracer, &parent);
        if span.is_recording() {
            self.record(&mut span, &version, id, params, carried);
        }
        // The duration's attributes. Their values are static or shared (`Arc`): the copies
        // cost no allocation but the `Vec`'s.
        let mut attributes = Vec::with_capacity(DURATION_ATTRIBUTES);
        attributes.push(method);
        attributes.push(version);
        attributes.extend(carried.network.iter().cloned());
        attributes.extend(target);
        Operation {
            span,
            started: Instant::now(),
            attributes,
            tool_call,
        }
    }

    /// What a recorded span has beyond those it started with: the version and the network's
    /// (as the duration), the request's id and resource, the session, the client, and the
    /// link to the HTTP request's span.
    fn record(
        &self,
        span: &mut BoxedSpan,
        version: &KeyValue,
        id: Option<&Id>,
        params: &Params<'_>,
        carried: &Carried<'_>,
    ) {
        span.set_attribute(version.clone());
        span.set_attributes(carried.network.iter().cloned());
        if let Some(id) = id {
            span.set_attribute(KeyValue::new(
                "jsonrpc.request.id",
                StringValue::from(request_id(id)),
            ));
        }
        if let Some(uri) = &params.uri {
            span.set_attribute(KeyValue::new("mcp.resource.uri", uri.to_string()));
        }
        span.set_attributes(self.session.iter().cloned());
        span.set_attributes(carried.client().into_iter().flatten().cloned());
        if let Some(http_span) = carried.http_span() {
            span.add_link(http_span.clone(), Vec::new());
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
            // Parsed only when it can say so: a result is read once more only if it names
            // `isError` at all (the scan costs less than the parse, and most results do not).
            Ok(result) if operation.tool_call && result.get().contains(r#""isError""#) => {
                serde_json::from_str::<ToolResult>(result.get())
                    .ok()
                    .filter(|r| r.is_error)
                    .map(|_| Failure {
                        kind: "tool_error".into(),
                        description: "the tool's result is an error".into(),
                        code: None,
                    })
            }
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
        if let Some(inner) = &self.telemetry.inner {
            inner
                .operation_duration
                .record(started.elapsed().as_secs_f64(), &attributes);
        }
        end(span);
    }
}

/// The most attributes of an operation's duration: method, version, the network's three, a
/// target, and `error.type` with `rpc.response.status_code` when it fails.
const DURATION_ATTRIBUTES: usize = 8;
/// The most attributes of an operation's span: the duration's, and request id, resource,
/// session, client address and port.
const SPAN_ATTRIBUTES: usize = DURATION_ATTRIBUTES + 5;

/// The methods a span is most often of: their names are recorded without a copy.
const METHODS: [&str; 22] = [
    "tools/call",
    "tools/list",
    "initialize",
    "notifications/initialized",
    "ping",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/get",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "server/discover",
];

/// `method`, static when it is a known one, else a copy: as an attribute value and as a span
/// name (alone, or before its target).
fn known_method(method: &str) -> Cow<'static, str> {
    match METHODS.iter().find(|known| **known == method) {
        Some(known) => Cow::Borrowed(*known),
        None => Cow::Owned(method.to_owned()),
    }
}

/// A span name: the method, then the target when there is one.
fn span_name(method: Cow<'static, str>, target: Option<&str>) -> Cow<'static, str> {
    match target {
        // Not `format!`, which costs several times the copies.
        Some(target) => {
            let mut name = String::with_capacity(method.len() + 1 + target.len());
            name.push_str(&method);
            name.push(' ');
            name.push_str(target);
            Cow::Owned(name)
        }
        None => method,
    }
}

fn value(s: Cow<'static, str>) -> StringValue {
    match s {
        Cow::Borrowed(s) => StringValue::from(s),
        Cow::Owned(s) => StringValue::from(s),
    }
}

/// The version an `initialize` asks for: static when it is a known one, else a copy.
fn known_version(asked: &str) -> StringValue {
    match asked.parse::<ProtocolVersion>() {
        Ok(version) => StringValue::from(version.as_str()),
        Err(_) => StringValue::from(asked.to_owned()),
    }
}

/// The client's context, as the global propagator reads it from `_meta`.
fn parent_of(meta: &serde_json::value::RawValue) -> Context {
    opentelemetry::global::get_text_map_propagator(|p| {
        // A propagator that reads no field (the default, a no-op) has no use for `_meta`.
        if p.fields().next().is_none() {
            return Context::new();
        }
        match borrowed_strings(meta) {
            Some(members) => p.extract_with_context(&Context::new(), &MetaCarrier(&members)),
            None => {
                let Ok(meta) =
                    serde_json::from_str::<HashMap<String, serde_json::Value>>(meta.get())
                else {
                    return Context::new();
                };
                let members: Vec<(&str, &str)> = meta
                    .iter()
                    .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
                    .collect();
                p.extract_with_context(&Context::new(), &MetaCarrier(&members))
            }
        }
    })
}

/// `_meta`'s string members, borrowed from the request: `None` when a key or a string holds
/// an escape (then they are copied), or `_meta` is not an object.
fn borrowed_strings(meta: &serde_json::value::RawValue) -> Option<Vec<(&str, &str)>> {
    let members: HashMap<&str, &serde_json::value::RawValue> =
        serde_json::from_str(meta.get()).ok()?;
    members
        .into_iter()
        .filter(|(_, v)| v.get().starts_with('"'))
        .map(|(k, v)| Some((k, serde_json::from_str::<&str>(v.get()).ok()?)))
        .collect()
}

/// How a request failed: its `error.type`, the status's description, and the JSON-RPC code
/// of an error response (`rpc.response.status_code`).
struct Failure {
    kind: String,
    description: String,
    code: Option<String>,
}
