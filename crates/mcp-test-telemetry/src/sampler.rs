//! [`DropsCalls`]: a sampler for the tests of what a sampler decides by.

use std::sync::{Arc, Mutex};

use opentelemetry::trace::{Link, SamplingResult, SpanKind, TraceId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{Sampler, ShouldSample};

use crate::attr;

/// What a sampler was asked about: each span's name and the attributes it started with.
type Asked = Arc<Mutex<Vec<(String, Vec<KeyValue>)>>>;

/// A sampler that keeps what it was asked about, and drops the spans of `tools/call`s (those
/// whose `mcp.method.name` is `tools/call` when they start); it samples every other span.
///
/// Its clones share what they were asked: keep one, give another to
/// [`Recorded::sampled_by`](crate::Recorded::sampled_by).
#[derive(Debug, Clone, Default)]
pub struct DropsCalls(Asked);

impl DropsCalls {
    /// What it was asked about so far, in order: each span's name and the attributes it
    /// started with.
    pub fn asked(&self) -> Vec<(String, Vec<KeyValue>)> {
        self.0.lock().unwrap().clone()
    }
}

impl ShouldSample for DropsCalls {
    fn should_sample(
        &self,
        parent: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        self.0
            .lock()
            .unwrap()
            .push((name.to_owned(), attributes.to_vec()));
        let sampler = match attr(attributes, "mcp.method.name").as_deref() {
            Some("tools/call") => Sampler::AlwaysOff,
            _ => Sampler::AlwaysOn,
        };
        sampler.should_sample(parent, trace_id, name, kind, attributes, links)
    }
}
