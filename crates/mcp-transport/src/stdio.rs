//! Newline-delimited JSON over a byte stream: the MCP stdio transport.
//!
//! Each message is one line of compact JSON. This is how a client talks to an MCP server it
//! runs as a child process (over the child's stdin and stdout), and how such a server talks
//! back ([`Stdio`]). Any `AsyncRead` / `AsyncWrite` pair works, so the same code runs over
//! pipes, sockets or an in-memory duplex.
//!
//! ```
//! use mcp_jsonrpc::{Message, Notification};
//! use mcp_transport::{Connection, Sender, stdio::StdioConnection};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), mcp_transport::Error> {
//! let (a_io, b_io) = tokio::io::duplex(4096);
//! let (a_read, a_write) = tokio::io::split(a_io);
//! let (b_read, b_write) = tokio::io::split(b_io);
//! let a = StdioConnection::new(a_read, a_write);
//! let mut b = StdioConnection::new(b_read, b_write);
//! a.sender().send(Notification::new("notifications/initialized", None).into()).await?;
//! assert!(matches!(b.recv().await?, Some(Message::Notification(_))));
//! # Ok(()) }
//! ```
//!
//! Reading is bounded: a line longer than the bound (default [`DEFAULT_MAX_LINE_BYTES`]) is
//! skipped without being buffered whole, and reported as [`ErrorKind::MessageTooLarge`]. A line
//! that is not JSON-RPC is reported as [`ErrorKind::InvalidMessage`]; both leave the connection
//! usable. Blank lines and a trailing CR are ignored; a line holding a batch yields its messages
//! one by one; a last line without its newline still counts.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_jsonrpc::Message;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Stdin, Stdout};
use tokio::sync::Mutex;

use crate::{Connection, Error, ErrorKind, Outgoing, Transport};

/// The longest line read by default: 16 MiB.
///
/// Large enough for tool results that carry images or documents inline, small enough that a
/// peer writing without ever sending a newline cannot exhaust memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The process's own stdin and stdout, as an MCP server launched by its client uses them.
///
/// ```no_run
/// use mcp_transport::{Connection, Transport, stdio::Stdio};
///
/// # async fn serve() -> Result<(), mcp_transport::Error> {
/// let mut conn = Stdio::new().connect().await?;
/// while let Some(message) = conn.recv().await? {
///     // handle the message
/// #   let _ = message;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Default, Clone, Copy)]
#[non_exhaustive]
pub struct Stdio;

impl Stdio {
    /// The transport over this process's stdin and stdout.
    pub fn new() -> Self {
        Stdio
    }
}

impl Transport for Stdio {
    type Connection = StdioConnection<Stdin, Stdout>;

    fn connect(self) -> impl Future<Output = Result<Self::Connection, Error>> + Send {
        std::future::ready(Ok(StdioConnection::new(
            tokio::io::stdin(),
            tokio::io::stdout(),
        )))
    }
}

/// A connection speaking newline-delimited JSON over `R` and `W`.
pub struct StdioConnection<R, W> {
    reader: BufReader<R>,
    line: Vec<u8>,
    max_line_bytes: usize,
    /// Skipping the rest of a line that was too long.
    discarding: bool,
    /// Messages of a batch line not yet handed out.
    pending: VecDeque<Message>,
    sender: StdioSender<W>,
}

impl<R, W> StdioConnection<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A connection reading messages from `reader` and writing them to `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        StdioConnection {
            reader: BufReader::new(reader),
            line: Vec::new(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            discarding: false,
            pending: VecDeque::new(),
            sender: StdioSender {
                shared: Arc::new(Shared {
                    writer: Mutex::new(Some(writer)),
                    closed: AtomicBool::new(false),
                }),
            },
        }
    }

    /// Sets the longest line that will be read (default [`DEFAULT_MAX_LINE_BYTES`]).
    pub fn max_line_bytes(mut self, max: usize) -> Self {
        self.max_line_bytes = max;
        self
    }

    /// The next complete line, without its line end; `None` at end of input.
    ///
    /// Cancel safe: the only await is `fill_buf`, and the state lives in `self`.
    async fn next_line(&mut self) -> Result<Option<Vec<u8>>, Error> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                let discarded = std::mem::take(&mut self.discarding);
                if discarded || self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(std::mem::take(&mut self.line)));
            }
            let (chunk, ends_line) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], true),
                None => (available, false),
            };
            let consumed = chunk.len() + usize::from(ends_line);
            if self.discarding {
                self.discarding = !ends_line;
                self.reader.consume(consumed);
                continue;
            }
            if self.line.len() + chunk.len() > self.max_line_bytes {
                let limit = self.max_line_bytes;
                self.line = Vec::new();
                self.discarding = !ends_line;
                self.reader.consume(consumed);
                return Err(Error::new(
                    ErrorKind::MessageTooLarge,
                    format!("line longer than {limit} bytes"),
                ));
            }
            self.line.extend_from_slice(chunk);
            self.reader.consume(consumed);
            if ends_line {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(line));
            }
        }
    }

    async fn recv_inner(&mut self) -> Result<Option<Message>, Error> {
        loop {
            if let Some(message) = self.pending.pop_front() {
                return Ok(Some(message));
            }
            if self.sender.shared.closed.load(Ordering::Acquire) {
                return Ok(None);
            }
            let Some(line) = self.next_line().await? else {
                return Ok(None);
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let body =
                mcp_jsonrpc::parse(&line).map_err(|e| Error::new(ErrorKind::InvalidMessage, e))?;
            self.pending.extend(body.into_messages());
        }
    }
}

impl<R, W> fmt::Debug for StdioConnection<R, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioConnection")
            .field("max_line_bytes", &self.max_line_bytes)
            .field("buffered_line_bytes", &self.line.len())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl<R, W> Connection for StdioConnection<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Sender = StdioSender<W>;

    fn sender(&self) -> StdioSender<W> {
        self.sender.clone()
    }

    fn recv(&mut self) -> impl Future<Output = Result<Option<Message>, Error>> + Send {
        self.recv_inner()
    }

    /// Stops reading and shuts the writer down, so the peer reads end of input.
    fn close(&mut self) -> impl Future<Output = Result<(), Error>> + Send {
        self.pending.clear();
        let shared = Arc::clone(&self.sender.shared);
        async move {
            shared.closed.store(true, Ordering::Release);
            let writer = shared.writer.lock().await.take();
            if let Some(mut writer) = writer {
                writer.shutdown().await?;
            }
            Ok(())
        }
    }
}

struct Shared<W> {
    /// `None` once closed. An async mutex: a write holds it across awaits so that two messages
    /// never interleave on the wire.
    writer: Mutex<Option<W>>,
    closed: AtomicBool,
}

/// The sending half of a [`StdioConnection`]. The relation of an [`Outgoing`] message is
/// ignored: there is one stream.
pub struct StdioSender<W> {
    shared: Arc<Shared<W>>,
}

impl<W> Clone for StdioSender<W> {
    fn clone(&self) -> Self {
        StdioSender {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<W> fmt::Debug for StdioSender<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioSender")
            .field("closed", &self.shared.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// One line: the compact encoding with any raw line break (only ever whitespace between JSON
/// tokens, from a raw payload) turned into a space, then a newline.
fn frame(message: &Message) -> Vec<u8> {
    let mut line = message.to_vec();
    for byte in &mut line {
        if matches!(*byte, b'\n' | b'\r') {
            *byte = b' ';
        }
    }
    line.push(b'\n');
    line
}

impl<W: AsyncWrite + Unpin + Send + 'static> crate::Sender for StdioSender<W> {
    fn send(&self, message: Outgoing) -> impl Future<Output = Result<(), Error>> + Send {
        let line = frame(&message.message);
        let shared = Arc::clone(&self.shared);
        async move {
            let mut guard = shared.writer.lock().await;
            let writer = guard.as_mut().ok_or_else(Error::closed)?;
            writer.write_all(&line).await?;
            writer.flush().await?;
            Ok(())
        }
    }

    fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}
