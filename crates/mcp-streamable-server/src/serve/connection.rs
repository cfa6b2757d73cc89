//! One accepted connection, from its first byte to its close: the protocol it speaks, hyper's
//! builders with the limits set, and the task that closes it when idle, over its budget, or
//! shutting down.

use std::sync::Arc;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::core::owner::PeerAddr;
use crate::http::service::StreamableHttpService;
use crate::serve::guard::Guard;
use crate::serve::options::Options;
use crate::serve::sniff::{Prefixed, Version, sniff};
use crate::serve::watch::{Watch, remaining};

/// What a connection's bytes travel over: TCP, or TLS over TCP.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {}

type Io<S> = TokioIo<Prefixed<S>>;

/// Serves one connection until it ends, is closed, or shutdown (`stop` turning `true`) has
/// let it finish what it had in flight. With TLS, the handshake comes first, within the
/// header read timeout as the first bytes of a plain connection are.
pub(crate) async fn serve_connection(
    tcp: TcpStream,
    peer: PeerAddr,
    service: StreamableHttpService,
    options: Arc<Options>,
    stop: watch::Receiver<bool>,
) {
    if let Err(err) = tcp.set_nodelay(true) {
        tracing::debug!(error = %err, "could not set TCP_NODELAY");
    }
    let deadline = Instant::now() + options.header_read_timeout;
    #[cfg(feature = "tls")]
    if let Some(tls) = &options.tls {
        let handshake = tokio::time::timeout_at(deadline, tls.acceptor().accept(tcp)).await;
        match handshake {
            Ok(Ok(tls)) => serve_stream(tls, deadline, peer, service, options, stop).await,
            Ok(Err(err)) => tracing::debug!(error = %err, "TLS handshake failed"),
            Err(_) => {
                tracing::debug!("a TLS handshake did not finish in time");
                timed_out(&service, "header_read");
            }
        }
        return;
    }
    serve_stream(tcp, deadline, peer, service, options, stop).await;
}

/// Serves the HTTP version a connection opens with, over `stream`.
async fn serve_stream<S: Stream>(
    stream: S,
    deadline: Instant,
    peer: PeerAddr,
    service: StreamableHttpService,
    options: Arc<Options>,
    stop: watch::Receiver<bool>,
) {
    let Some((version, io)) = sniff(stream, deadline).await else {
        tracing::debug!("a connection sent no request in time, or closed");
        if Instant::now() >= deadline {
            timed_out(&service, "header_read");
        }
        return;
    };
    let closes = Closes {
        #[cfg(feature = "otel")]
        telemetry: service.telemetry().clone(),
        h2: version == Version::H2,
    };
    let watch = Arc::new(Watch::new(options.max_reset_rate));
    let guard = Guard {
        peer,
        service,
        options: Arc::clone(&options),
        watch: Arc::clone(&watch),
    };
    let io = TokioIo::new(io);
    match version {
        Version::H1 => drive(h1(&options, io, guard), &watch, &options, stop, closes).await,
        Version::H2 => drive(h2(&options, io, guard), &watch, &options, stop, closes).await,
    }
}

fn h1<S: Stream>(options: &Options, io: Io<S>, guard: Guard) -> http1::Connection<Io<S>, Guard> {
    http1::Builder::new()
        // Without a timer, hyper's header read timeout does nothing.
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .keep_alive(true)
        .serve_connection(io, guard)
}

fn h2<S: Stream>(
    options: &Options,
    io: Io<S>,
    guard: Guard,
) -> http2::Connection<Io<S>, Guard, TokioExecutor> {
    http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .max_concurrent_streams(options.h2_max_concurrent_streams)
        .max_pending_accept_reset_streams(options.h2_max_pending_accept_reset_streams)
        .max_local_error_reset_streams(options.h2_max_local_error_reset_streams)
        .keep_alive_interval(options.h2_keep_alive)
        .keep_alive_timeout(options.h2_keep_alive)
        .serve_connection(io, guard)
}

/// A hyper connection that can be asked to finish what it has in flight and close.
trait Graceful: Future<Output = hyper::Result<()>> {
    fn graceful(self: std::pin::Pin<&mut Self>);
}

impl<S: Stream> Graceful for http1::Connection<Io<S>, Guard> {
    fn graceful(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<S: Stream> Graceful for http2::Connection<Io<S>, Guard, TokioExecutor> {
    fn graceful(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// How long a connection over its reset budget is still read after its `GOAWAY` is written.
/// Closed at once, with frames the peer sent meanwhile unread, the socket would be reset, and
/// the peer's TCP stack may then drop the `GOAWAY` it had not read yet: the peer would see a
/// reset, not why. After `GOAWAY` the peer can open no stream, so the moment costs nothing.
const OVER_BUDGET_LINGER: std::time::Duration = std::time::Duration::from_millis(250);

/// Runs `conn` until it ends. It is asked to close gracefully (HTTP/2: `GOAWAY`) when shutdown
/// begins, when its peer goes over the reset budget, or when it has had nothing in flight
/// for the idle timeout (the header read timeout until its first request); from then on it
/// gets the shutdown grace to end by itself before it is dropped (a moment when over budget).
async fn drive<C: Graceful>(
    conn: C,
    watch: &Watch,
    options: &Options,
    mut stop: watch::Receiver<bool>,
    closes: Closes,
) {
    let conn = std::pin::pin!(conn);
    let mut conn = conn;
    let mut closing: Option<Instant> = None;
    if *stop.borrow_and_update() {
        closes.graceful("shutdown");
        conn.as_mut().graceful();
        closing = Some(Instant::now() + options.shutdown_grace);
    }
    // Bounded: each turn ends the connection, starts closing it (once), or waits for a timer
    // at least a moment ahead.
    loop {
        let wake = closing.unwrap_or_else(|| next_idle_check(watch, options));
        tokio::select! {
            biased;
            result = conn.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!(error = %err, "connection ended");
                }
                return;
            }
            () = watch.changed(), if closing.is_none() => {}
            _ = stop.changed(), if closing.is_none() => {}
            () = tokio::time::sleep_until(wake) => {
                if closing.is_some() {
                    tracing::debug!("a closing connection did not end in time; dropped");
                    closes.timed_out("shutdown_grace");
                    return;
                }
                if !watch.used() && watch.idle_since().is_some() {
                    tracing::debug!("a connection sent no request in time");
                    closes.timed_out("header_read");
                    return;
                }
            }
        }
        if closing.is_none()
            && let Some(why) = must_close(watch, options, *stop.borrow())
        {
            closes.graceful(why);
            conn.as_mut().graceful();
            // A peer over its reset budget gets its `GOAWAY` and only a moment to read it (see
            // `OVER_BUDGET_LINGER`), not the grace, which it would use to go on.
            let grace = if watch.over_budget() {
                OVER_BUDGET_LINGER
            } else {
                options.shutdown_grace
            };
            closing = Some(Instant::now() + grace);
        }
    }
}

/// When to look at the connection's idleness next.
fn next_idle_check(watch: &Watch, options: &Options) -> Instant {
    let now = Instant::now();
    let limit = idle_limit(watch, options);
    match watch.idle_since() {
        Some(since) => now + remaining(since, limit, now),
        None => now + limit,
    }
}

fn idle_limit(watch: &Watch, options: &Options) -> std::time::Duration {
    if watch.used() {
        options.idle_timeout
    } else {
        options.header_read_timeout
    }
}

/// Whether the connection is to close now, and why: `shutdown`, `reset_budget` (its peer went
/// over it), or `idle` (too long).
fn must_close(watch: &Watch, options: &Options, stopping: bool) -> Option<&'static str> {
    let idle = watch.idle_since().is_some_and(|since| {
        remaining(since, idle_limit(watch, options), Instant::now()).is_zero()
    });
    if stopping {
        Some("shutdown")
    } else if watch.over_budget() {
        Some("reset_budget")
    } else {
        idle.then_some("idle")
    }
}

/// What a connection tells the service's telemetry of how it closes.
struct Closes {
    #[cfg(feature = "otel")]
    telemetry: crate::core::telemetry::Telemetry,
    h2: bool,
}

impl Closes {
    /// The connection is asked to close, for `why`: an HTTP/2 one with `GOAWAY`; one idle too
    /// long timed out.
    fn graceful(&self, why: &'static str) {
        #[cfg(feature = "otel")]
        {
            if self.h2 {
                self.telemetry.goaway(why);
            }
            if why == "idle" {
                self.telemetry.timed_out("idle");
            }
        }
        let _ = (self.h2, why);
    }

    fn timed_out(&self, kind: &'static str) {
        #[cfg(feature = "otel")]
        self.telemetry.timed_out(kind);
        let _ = kind;
    }
}

/// A connection closed for a timeout before its HTTP version was known.
fn timed_out(service: &StreamableHttpService, kind: &'static str) {
    #[cfg(feature = "otel")]
    service.telemetry().timed_out(kind);
    let _ = (service, kind);
}
