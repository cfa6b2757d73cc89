//! A program's log, set up in one place: `RUST_LOG` chooses what is logged (`info` by default,
//! see [`DEFAULT_FILTER`]), [`LogFormat`] how, to stderr, with colour codes only when stderr is
//! a terminal (a log file or a collector gets none).
//!
//! A line logged inside one of the server's `tracing` spans carries the span's fields: the
//! session's (`mcp.session`, `session_id`) is a `debug` span, so its id shows from
//! `RUST_LOG=mcp_streamable_server=debug` on; the server's `info` lines and above name their
//! session themselves.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// What is logged without `RUST_LOG`: `info` lines (a signal, a takeover, a lease lost, a
/// child's stderr in the gateway), and of OpenTelemetry's own only warnings (it says at `info`
/// that providers were set).
pub const DEFAULT_FILTER: &str = "info,opentelemetry=warn,opentelemetry_sdk=warn";

/// The server's request log: its events are `debug` lines under this target, turned on by
/// [`Logs::request_log`] whatever `RUST_LOG` says.
pub const REQUEST_LOG_TARGET: &str = "mcp_streamable_server::requests";

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[non_exhaustive]
pub enum LogFormat {
    /// One line of text per event: time, level, spans with their fields, message.
    #[default]
    Plain,
    /// One JSON object per line (`timestamp`, `level`, `fields.message`, `target`, `span`,
    /// `spans`), for a log collector.
    Json,
}

/// The log's settings; with feature `clap`, the flags `--log-format plain|json`
/// (`MCP_LOG_FORMAT`) and `--request-log` (`MCP_REQUEST_LOG`): `#[command(flatten)]` it and call
/// [`Logs::init`] first thing.
///
/// ```
/// use mcp_streamable_telemetry::{LogFormat, Logs};
///
/// let mut logs = Logs::default();
/// assert_eq!(logs.log_format, LogFormat::Plain);
/// logs.request_log = true;
/// // logs.init() installs the process's subscriber, once.
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[non_exhaustive]
pub struct Logs {
    /// How log lines are written to stderr: `plain` text or `json` (one object a line).
    /// `RUST_LOG` chooses what is logged (`info` unless set).
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "MCP_LOG_FORMAT", value_enum, default_value_t = LogFormat::Plain)
    )]
    pub log_format: LogFormat,
    /// Logs a line for each HTTP request answered (method, session, JSON-RPC method and id,
    /// status, refusal, time to the answer's head), whatever `RUST_LOG` says.
    #[cfg_attr(feature = "clap", arg(long, env = "MCP_REQUEST_LOG"))]
    pub request_log: bool,
}

impl Logs {
    /// Installs the process's `tracing` subscriber: stderr, filtered by `RUST_LOG` (else
    /// [`DEFAULT_FILTER`]), in the format chosen.
    ///
    /// # Panics
    /// When a global subscriber was installed already: call it once, before anything logs.
    pub fn init(self) {
        let builder = tracing_subscriber::fmt()
            .with_env_filter(self.filter())
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal());
        match self.log_format {
            LogFormat::Plain => builder.init(),
            LogFormat::Json => builder.json().with_current_span(true).init(),
        }
    }

    fn filter(&self) -> EnvFilter {
        let filter =
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
        if !self.request_log {
            return filter;
        }
        let directive = format!("{REQUEST_LOG_TARGET}=debug");
        filter.add_directive(
            directive
                .parse()
                .expect("the request log's directive parses"),
        )
    }
}
