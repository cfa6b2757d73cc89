//! The example servers' logs, set up in one place: `RUST_LOG` chooses what is logged (`info` by
//! default, see [`DEFAULT_FILTER`]), `--log-format` (`MCP_LOG_FORMAT`) how, to stderr, with colour codes only when
//! stderr is a terminal (a log file or a collector gets none).
//!
//! A line logged inside one of the server's `tracing` spans carries the span's fields: the
//! session's (`mcp.session`, `session_id`) is a `debug` span, so its id shows from
//! `RUST_LOG=mcp_streamable_server=debug` on.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// What is logged without `RUST_LOG`: the server's `info` lines (a signal, a takeover, a lease
/// lost), and of OpenTelemetry's own only warnings (it says at `info` that providers were set).
pub const DEFAULT_FILTER: &str = "info,opentelemetry=warn,opentelemetry_sdk=warn";

/// The server's request log (its events are `debug` under this target), turned on by
/// `--request-log`.
const REQUEST_LOG: &str = "mcp_streamable_server::requests=debug";

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
#[non_exhaustive]
pub enum Format {
    /// One line of text per event: time, level, spans with their fields, message.
    #[default]
    Plain,
    /// One JSON object per line (`timestamp`, `level`, `fields.message`, `target`, `span`,
    /// `spans`), for a log collector.
    Json,
}

/// `--log-format plain|json`: `#[command(flatten)]` it and call [`Logs::init`] first thing.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Logs {
    /// How log lines are written to stderr: `plain` text or `json` (one object a line).
    /// `RUST_LOG` chooses what is logged (`info` unless set).
    #[arg(long, env = "MCP_LOG_FORMAT", value_enum, default_value_t = Format::Plain)]
    pub log_format: Format,
    /// Logs a line for each HTTP request answered (method, session, JSON-RPC method and id,
    /// status, refusal, time to the answer's head), whatever `RUST_LOG` says.
    #[arg(long, env = "MCP_REQUEST_LOG")]
    pub request_log: bool,
}

impl Logs {
    /// Installs the process's `tracing` subscriber: stderr, filtered by `RUST_LOG`, in the
    /// format chosen. Call it once, before anything logs.
    pub fn init(self) {
        let mut filter =
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
        if self.request_log {
            filter = filter.add_directive(
                REQUEST_LOG
                    .parse()
                    .expect("the request log's directive parses"),
            );
        }
        let ansi = std::io::stderr().is_terminal();
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(ansi);
        match self.log_format {
            Format::Plain => builder.init(),
            Format::Json => builder.json().with_current_span(true).init(),
        }
    }
}
