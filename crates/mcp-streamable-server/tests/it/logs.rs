//! Capturing what the server logs, for the rows that say "and that is logged" (S13, S22).
//!
//! A minimal `tracing` subscriber, installed for the current thread only: use it in
//! current-thread runtime tests, where every task runs on that thread.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

/// The events logged while the guard of [`capture`] lives: `(level, message and fields)`.
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<(Level, String)>>>);

impl Logs {
    /// Whether an event at `level` or more severe has all of `words` in its text.
    pub(crate) fn has(&self, level: Level, words: &[&str]) -> bool {
        self.0
            .lock()
            .unwrap()
            .iter()
            .any(|(l, text)| *l <= level && words.iter().all(|w| text.contains(w)))
    }

    pub(crate) fn dump(&self) -> String {
        format!("{:#?}", self.0.lock().unwrap())
    }
}

struct Capture {
    logs: Logs,
    next_span: AtomicU64,
}

struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        self.logs
            .0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), text.0));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The test binary's global subscriber: it logs nothing, and calls every callsite
/// "sometimes" interesting, so that `tracing`'s cached interest is never "never": each event
/// then asks the subscriber of its own thread. Without it, tests installing and dropping their
/// captures at once could race `tracing`'s rebuild of that cache and leave a callsite off for a
/// test that wants it (CI saw the request log's line missing once, the line before it there).
struct Silent;

impl Subscriber for Silent {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Captures this thread's events until the guard drops.
pub(crate) fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
    static SILENT: std::sync::Once = std::sync::Once::new();
    SILENT.call_once(|| {
        // Fails only if a global subscriber is set already, which then decides alone.
        let _ = tracing::subscriber::set_global_default(Silent);
    });
    let logs = Logs::default();
    let guard = tracing::subscriber::set_default(Capture {
        logs: logs.clone(),
        next_span: AtomicU64::new(0),
    });
    (logs, guard)
}
