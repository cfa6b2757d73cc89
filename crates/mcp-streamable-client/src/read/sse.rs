//! Reading one SSE stream, a POST's or the standalone GET's, and resuming it with GET and
//! `Last-Event-ID` when its connection is lost (C3, C4, C5); or, for a per-request request,
//! sending the request again under a new id (M7).

use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use http::{HeaderValue, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Frame;
use mcp_jsonrpc::Message;
use mcp_sse::{Event, Scanner};
use tokio::sync::watch;

use crate::error::{Error, Kind};
use crate::headers::{self, Format};
use crate::read::json;
use crate::read::recovery::Recovery;
use crate::read::silence::Silence;
use crate::read::tracker::Tracker;
use crate::reconnect::Budget;
use crate::state::Inner;
use crate::wire::{Answer, Body, BodyError, Call, SessionHeaders};

/// One logical SSE stream, across the connections that carry it.
#[derive(Debug)]
pub(crate) struct SseStream {
    inner: Arc<Inner>,
    /// The standalone GET stream (C3), rather than a POST's.
    standalone: bool,
    /// The session the stream belongs to: resumption asks for it, not for a newer one.
    session: SessionHeaders,
    tracker: Tracker,
    /// Carried from connection to connection, for the last event id and the server's `retry`.
    scanner: Scanner,
    budget: Budget,
    /// What to do when the stream breaks before the response: resume it, or, for the stream
    /// of a per-request request, send the request again (M7).
    recovery: Recovery,
    /// The response of a POST's stream, held back until the end of the chunk that carried it
    /// and a look for the stream's end.
    held: Option<Message>,
}

/// How reading one connection of the stream ended.
enum Read {
    /// The connection ended, or broke; `true` if it made progress.
    Ended(bool),
    /// The connection is closed, or the stream is over: stop.
    Stop,
}

impl SseStream {
    /// The stream answering a POST, which must carry the response `tracker` waits for, and
    /// recovers as `recovery` says.
    ///
    /// Boxed, as every stream is: its reader holds a pointer rather than the stream itself,
    /// which keeps the reader's future, allocated once per reply, small enough for the
    /// allocator's fast path.
    pub(crate) fn for_post(
        inner: Arc<Inner>,
        session: SessionHeaders,
        tracker: Tracker,
        recovery: Recovery,
    ) -> Box<Self> {
        SseStream::new(inner, false, session, tracker, recovery)
    }

    /// The standalone GET stream of `session`.
    pub(crate) fn standalone(inner: Arc<Inner>, session: SessionHeaders) -> Box<Self> {
        SseStream::new(inner, true, session, Tracker::default(), Recovery::Resume)
    }

    fn new(
        inner: Arc<Inner>,
        standalone: bool,
        session: SessionHeaders,
        tracker: Tracker,
        recovery: Recovery,
    ) -> Box<Self> {
        let scanner = Scanner::with_max_event_size(inner.config().max_event_size);
        let budget = Budget::new(&inner.config().reconnect);
        Box::new(SseStream {
            inner,
            standalone,
            session,
            tracker,
            scanner,
            budget,
            recovery,
            held: None,
        })
    }

    /// Reads the stream from `first` (a POST's body), or from a GET of its own (the standalone
    /// stream), reconnecting until it is over.
    pub(crate) async fn run(mut self: Box<Self>, first: Option<Body>) {
        let Some(first) = first else {
            return Box::pin(self.reconnect(None, false)).await;
        };
        if self.resends() {
            return Box::pin(self.run_resending(first)).await;
        }
        // The usual life of a POST's stream, one connection that carries the response, is
        // kept apart from the reconnections, boxed: their state would enlarge every reader's.
        let mut shutdown = self.inner.shutdown_signal();
        let progress = match self.read(first, &mut shutdown).await {
            Read::Stop => return,
            Read::Ended(progress) => progress,
        };
        if !self.standalone && self.tracker.is_done() {
            return;
        }
        Box::pin(self.reconnect(Some(shutdown), progress)).await;
    }

    /// Resumes the stream until it is over, after a first connection that ended (`progress`
    /// when it moved the stream on), or from the start for the standalone stream.
    async fn reconnect(
        mut self: Box<Self>,
        shutdown: Option<watch::Receiver<bool>>,
        progress: bool,
    ) {
        let mut connected_before = shutdown.is_some();
        let mut shutdown = shutdown.unwrap_or_else(|| self.inner.shutdown_signal());
        if progress {
            self.budget.refill();
        }
        // The last reconnection could not reach the server.
        let mut unreachable = false;
        let mut body = None;
        loop {
            if let Some(connection) = body.take() {
                match self.read(connection, &mut shutdown).await {
                    Read::Stop => return,
                    Read::Ended(progress) => {
                        if progress {
                            self.budget.refill();
                        }
                    }
                }
            }
            if !self.standalone && self.tracker.is_done() {
                return;
            }
            let last = self.scanner.last_event_id();
            if !self.standalone && last.is_empty() {
                let reason =
                    "the stream ended before the response, without an event id to resume from";
                self.give_up(reason).await;
                return;
            }
            let last_event_id = match (!last.is_empty()).then(|| HeaderValue::from_str(last)) {
                None => None,
                Some(Ok(value)) => Some(value),
                Some(Err(_)) => {
                    self.give_up("the stream's event id cannot be sent back")
                        .await;
                    return;
                }
            };
            if connected_before {
                let Some(attempt) = self.budget.take() else {
                    let reason = format!(
                        "the stream could not be resumed in {} attempts",
                        self.budget.max()
                    );
                    self.give_up(&reason).await;
                    if self.standalone && unreachable {
                        // The session's own stream cannot reach its server: the server has
                        // gone, and so has the connection (a send would fail too).
                        tracing::debug!("server unreachable; closing the connection");
                        self.inner.terminate();
                    }
                    return;
                };
                let policy = &self.inner.config().reconnect;
                // The server's `retry` is a wish a 2025-11-25 client must honour (C4).
                let delay = self
                    .scanner
                    .retry()
                    .unwrap_or_else(|| policy.delay(attempt));
                tracing::debug!(
                    ?delay,
                    attempt,
                    standalone = self.standalone,
                    "reconnecting"
                );
                tokio::select! {
                    biased;
                    _ = shutdown.wait_for(|closed| *closed) => return,
                    () = tokio::time::sleep(delay) => {}
                }
            }
            connected_before = true;
            let response = tokio::select! {
                biased;
                _ = shutdown.wait_for(|closed| *closed) => return,
                response = Box::pin(self.get(last_event_id)) => response,
            };
            unreachable = matches!(&response, Err(e) if e.is_unreachable());
            match response {
                Ok(response) if headers::format(response.headers()) == Format::Sse => {
                    self.scanner.finish();
                    body = Some(response.into_body());
                }
                Ok(_) => {
                    tracing::warn!("server answered an SSE GET without an event stream");
                    self.give_up("the server answered the resumption without an event stream")
                        .await;
                    return;
                }
                Err(e) if e.is_transient() => {
                    tracing::debug!(error = %e, "reconnection failed");
                }
                Err(e) if self.standalone && e.status() == Some(StatusCode::METHOD_NOT_ALLOWED) => {
                    // The server offers no standalone stream: normal, not an error (C3).
                    tracing::debug!("server offers no standalone stream");
                    return;
                }
                Err(e) => {
                    let reason = format!("the server refused to resume the stream ({e})");
                    self.give_up(&reason).await;
                    return;
                }
            }
        }
    }

    /// Reads the stream of a per-request request (M7). Such a stream is not resumable: when it
    /// ends before the response, the request is sent again under a new id, after the
    /// reconnection policy's backoff and within its budget, until a reply carries the response.
    async fn run_resending(mut self: Box<Self>, first: Body) {
        let mut shutdown = self.inner.shutdown_signal();
        let mut body = first;
        loop {
            match self.read(body, &mut shutdown).await {
                Read::Stop => return,
                Read::Ended(progress) => {
                    if progress {
                        self.budget.refill();
                    }
                }
            }
            if self.tracker.is_done() {
                return;
            }
            let Some(next) = self.resend(&mut shutdown).await else {
                return;
            };
            body = next;
            self.scanner = Scanner::with_max_event_size(self.inner.config().max_event_size);
        }
    }

    /// Sends the request again until an answer opens a new stream (`Some`), or the request is
    /// over: answered, refused, given up, or the connection closed (`None`).
    async fn resend(&mut self, shutdown: &mut watch::Receiver<bool>) -> Option<Body> {
        loop {
            let Some(attempt) = self.budget.take() else {
                let reason = format!(
                    "the stream ended before the response and re-sending the request failed in {} attempts",
                    self.budget.max()
                );
                self.give_up(&reason).await;
                return None;
            };
            let delay = self.inner.config().reconnect.delay(attempt);
            tracing::debug!(?delay, attempt, "re-sending a request whose stream ended");
            tokio::select! {
                biased;
                _ = shutdown.wait_for(|closed| *closed) => return None,
                () = tokio::time::sleep(delay) => {}
            }
            let Recovery::Resend(resend) = &mut self.recovery else {
                return None;
            };
            let (id, answer) = tokio::select! {
                biased;
                _ = shutdown.wait_for(|closed| *closed) => return None,
                sent = resend.post(&self.inner.http) => sent,
            };
            self.tracker.resend_as(id);
            match answer {
                Answer::Success(response) => match headers::format(response.headers()) {
                    Format::Sse => return Some(response.into_body()),
                    Format::Json => {
                        let tracker = std::mem::take(&mut self.tracker);
                        let (inner, session) = (self.inner.clone(), self.session.clone());
                        json::read(inner, session, response.into_body(), tracker).await;
                        return None;
                    }
                    Format::Other => {
                        let reason =
                            "the re-sent request was answered without JSON or an event stream";
                        self.give_up(reason).await;
                        return None;
                    }
                },
                Answer::Refused { error, .. } => {
                    self.tracker.refused(&self.inner, error).await;
                    return None;
                }
                Answer::Failed(e) if e.is_transient() => {
                    tracing::debug!(error = %e, "re-sending failed");
                }
                Answer::Failed(e) => {
                    let reason = format!("the server refused the re-sent request ({e})");
                    self.give_up(&reason).await;
                    return None;
                }
            }
        }
    }

    async fn get(&self, last_event_id: Option<HeaderValue>) -> Result<http::Response<Body>, Error> {
        let config = self.inner.config();
        let call = Call::get(config, &config.url, &self.session, last_event_id);
        self.inner.http.execute(&call).await
    }

    /// Whether the stream recovers by sending its request again (M7).
    fn resends(&self) -> bool {
        matches!(self.recovery, Recovery::Resend(_))
    }

    /// The stream is over without the response: answer the waiting request with an error.
    async fn give_up(&mut self, reason: &str) {
        if self.standalone {
            tracing::debug!(reason, "standalone stream given up");
        }
        self.tracker.give_up(&self.inner, reason).await;
    }

    /// Reads one connection of the stream to its end.
    async fn read(&mut self, mut body: Body, shutdown: &mut watch::Receiver<bool>) -> Read {
        let mut silence = Silence::new(self.inner.config().sse_idle_timeout);
        // An event with an id moves the stream on, as one with messages does.
        let mut moved = false;
        let mut delivered = false;
        // A frame read ahead: the first, when it came with the head (as a POST's reply read
        // from a pooled connection usually does), which then needs none of the waits below;
        // after the response, the next, to see the stream end.
        let mut ahead = body.frame().now_or_never().map(data_of);
        loop {
            let data = match ahead.take() {
                Some(frame) => frame,
                None => tokio::select! {
                    biased;
                    _ = shutdown.wait_for(|closed| *closed) => return Read::Stop,
                    frame = body.frame() => data_of(frame),
                    () = silence.too_long() => {
                        tracing::debug!(standalone = self.standalone, "event stream silent; treating it as broken");
                        break;
                    }
                },
            };
            silence.heard();
            let data = match data {
                None => break,
                Some(Err(e)) => {
                    tracing::debug!(error = %e, standalone = self.standalone, "event stream broken");
                    break;
                }
                Some(Ok(None)) => continue,
                Some(Ok(Some(data))) => data,
            };
            self.scanner.feed(&data);
            loop {
                match self.scanner.next_event() {
                    Ok(None) => break,
                    Ok(Some(event)) => {
                        moved |= event.id.is_some();
                        if !carries_messages(&event) {
                            continue;
                        }
                        // Boxed: handling the messages is the largest state of a reader, and
                        // the reader of every reply is allocated whole; a small box per event
                        // costs less than a large reader.
                        match Box::pin(self.on_event(event)).await {
                            // A per-request stream carries nothing after its response (M6): it
                            // is over, and its connection can go.
                            Some(_) if self.resends() && self.tracker.is_done() => {
                                return Read::Stop;
                            }
                            Some(any) => delivered |= any,
                            None => return Read::Stop,
                        }
                    }
                    Err(e) => {
                        // Boxed, as rare: its state would enlarge every reader's.
                        if !Box::pin(self.too_large(e)).await {
                            return Read::Stop;
                        }
                    }
                }
            }
            if self.held.is_some() {
                // The server ends a POST's stream after its response: once that end is read,
                // the connection goes back to the pool before the caller, woken by the
                // response, sends its next request on another. A pooled body reads it here;
                // hyper-util's connection task reads it once this task lets it run.
                if !body.drives_connection() {
                    tokio::task::yield_now().await;
                }
                ahead = body.frame().now_or_never().map(data_of);
                if !self.release().await {
                    return Read::Stop;
                }
            }
        }
        self.scanner.finish();
        tracing::debug!(standalone = self.standalone, "event stream ended");
        Read::Ended(delivered || moved)
    }

    /// Reports an event over the size limit; false when reading must stop: nobody reads, or
    /// the stream of a POST can no longer carry its response.
    async fn too_large(&mut self, e: mcp_sse::ScanError) -> bool {
        if !self.release().await {
            return false;
        }
        let limit = self.scanner.max_event_size();
        tracing::warn!(limit, "server sent an event larger than the limit");
        let error = Error::new(Kind::TooLarge { limit }).with(e);
        if !self.inner.deliver(Err(error.into())).await {
            return false;
        }
        if !self.standalone {
            // The response may have been that event: it cannot come now, and resuming would
            // replay it.
            let reason =
                format!("the stream carried an event larger than the limit of {limit} bytes");
            self.give_up(&reason).await;
            return false;
        }
        true
    }

    /// Delivers the response held back, if any; false once nobody reads.
    async fn release(&mut self) -> bool {
        match self.held.take() {
            Some(response) => self.inner.deliver(Ok(response)).await,
            None => true,
        }
    }

    /// Handles an event that [carries messages](carries_messages): `Some(true)` if it held
    /// some, `None` once nobody reads.
    async fn on_event(&mut self, event: Event) -> Option<bool> {
        match mcp_jsonrpc::parse(event.data.as_bytes()) {
            Ok(body) => {
                for msg in body {
                    let waiting = !self.tracker.is_done();
                    let Some(msg) = self.tracker.observe(&self.inner, &self.session, msg) else {
                        continue;
                    };
                    if waiting && self.tracker.is_done() && !self.standalone && !self.resends() {
                        self.held = Some(msg);
                        continue;
                    }
                    if !self.release().await || !self.inner.deliver(Ok(msg)).await {
                        return None;
                    }
                }
                Some(true)
            }
            Err(e) => {
                tracing::warn!(error = %e, "server sent an event that is not JSON-RPC");
                let error = Error::new(Kind::InvalidMessage).with(e);
                self.inner.deliver(Err(error.into())).await.then_some(false)
            }
        }
    }
}

/// The data of a frame of the stream (`Ok(None)` for trailers), kept apart from the frame,
/// which is several times larger with the trailers it may hold and lives across awaits.
fn data_of(
    frame: Option<Result<Frame<Bytes>, BodyError>>,
) -> Option<Result<Option<Bytes>, BodyError>> {
    frame.map(|frame| frame.map(|frame| frame.into_data().ok()))
}

/// Whether an event is one of messages: not a priming event (empty data), whose id and retry
/// are the scanner's business, nor an event of another name.
fn carries_messages(event: &Event) -> bool {
    if event.data.is_empty() {
        return false;
    }
    if let Some(name) = event.name.as_deref().filter(|n| *n != "message") {
        tracing::debug!(name, "ignoring an event that is not a message");
        return false;
    }
    true
}
