//! The asking node's side of a POST whose session another node holds (N9): the holder's stream
//! relayed to the client event by event; when it breaks before every response came (the holder
//! died, stepped down, or the connection between the nodes was cut), asked for again wherever
//! the session is held then (taken over here, if nobody has): the forward again while no event
//! came, which the holder never delivers twice; a resumption of its stream after the last event
//! relayed once one did. A request that cannot be answered so gets an error, never silence.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Body as _, Incoming};
use mcp_jsonrpc::{Body, ErrorObject, Id, Message, code};
use mcp_sse::Scanner;

use crate::core::Session;
use crate::core::session::reader::Reader;
use crate::core::session::state::Posted;
use crate::core::store::event_store::StoredEvent;
use crate::http::app::Server;
use crate::http::local::{Opened, open};
use crate::http::remote::{self, Ask, Reached};
use crate::http::reply::body::Frames;
use crate::http::reply::keep_alive::KeepAlive;
use crate::http::reply::sse::{MAX_FRAME, frame, write_priming};
use crate::http::reply::{self, ResponseBody};
use crate::protocol::{self, EventId};

/// How many times a relayed stream is asked for again after it broke, at most.
const BREAKS: usize = 8;

/// The most bytes one relayed event may take: what the client's own bound is by default.
const MAX_EVENT: usize = mcp_sse::DEFAULT_MAX_EVENT_SIZE;

/// The client's answer to a POST the holder answered with `answer`: the holder's refusal or
/// 202 as it is; its stream relayed, or collected into JSON in JSON-response mode (S4, S5).
pub(crate) async fn post(
    server: &Arc<Server>,
    ask: Ask,
    answer: Response<Incoming>,
    body: Option<&Body>,
) -> Response<ResponseBody> {
    let is_sse = answer
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    if answer.status() != StatusCode::OK || !is_sse {
        return remote::proxied(answer);
    }
    let requests: Vec<Id> = body
        .map(|b| {
            b.messages()
                .iter()
                .filter_map(Message::request_id)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let is_batch = body.is_some_and(Body::is_batch);
    let session = http::HeaderValue::from_str(&ask.session).ok();
    let relay = Relay {
        server: Arc::clone(server),
        ask,
        source: Source::Remote(answer.into_body()),
        scanner: Scanner::with_max_event_size(MAX_EVENT),
        stream: None,
        after: 0,
        unanswered: requests,
        breaks: 0,
    };
    if server.shared.config.json_response {
        return relay.json(is_batch, session).await;
    }
    relay.sse(Vec::new(), session)
}

/// What a relayed stream gives its client.
enum Item {
    /// A priming event (S14): the id to resume from, and the reconnection delay.
    Priming(EventId, Duration),
    /// A message, with its event id when the holder gave one.
    Message {
        id: Option<EventId>,
        message: Bytes,
        response: bool,
    },
}

/// Where the relayed stream comes from now.
enum Source {
    /// The holder's answer.
    Remote(Incoming),
    /// The session, held here now: what it replays, then its stream.
    Local(VecDeque<StoredEvent>, Reader),
    /// Broken: to be asked for again.
    Over,
    /// Being asked for again. (In a mutex only so that the relay is `Sync`, as a response's
    /// body is: it is polled through `get_mut`, never locked.)
    Asking(Mutex<Again>),
}

/// A broken stream asked for again: the ask as it was sent, and where the stream comes from now
/// or why it cannot be had.
type Again = Pin<Box<dyn Future<Output = (Ask, Result<Source, String>)> + Send>>;

struct Relay {
    server: Arc<Server>,
    ask: Ask,
    source: Source,
    scanner: Scanner,
    /// The stream, once an event named it, and the last index relayed.
    stream: Option<u64>,
    after: u64,
    /// The requests whose responses have not come.
    unanswered: Vec<Id>,
    breaks: usize,
}

impl Relay {
    /// The next events, or `None` once every response came, or the stream cannot be had any
    /// more: then every request still unanswered got an error.
    fn poll_items(&mut self, cx: &mut Context<'_>) -> Poll<Option<Vec<Item>>> {
        loop {
            if self.unanswered.is_empty() {
                return Poll::Ready(None);
            }
            let items = match &mut self.source {
                Source::Remote(body) => match ready!(Pin::new(body).poll_frame(cx)) {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => self.scan(&data),
                        Err(_) => continue,
                    },
                    Some(Err(_)) | None => {
                        self.source = Source::Over;
                        continue;
                    }
                },
                Source::Local(replay, reader) => {
                    let stream = reader.stream();
                    let taken: Vec<(u64, Bytes)> = if replay.is_empty() {
                        match ready!(reader.poll_take(cx, MAX_FRAME)) {
                            Some(taken) => {
                                taken.iter().map(|e| (e.index, e.json.clone())).collect()
                            }
                            None => {
                                self.source = Source::Over;
                                continue;
                            }
                        }
                    } else {
                        replay.drain(..).map(|e| (e.index, e.message)).collect()
                    };
                    taken
                        .into_iter()
                        .map(|(index, message)| {
                            self.message(Some(EventId::new(stream, index)), message)
                        })
                        .collect()
                }
                Source::Over => match self.ask_again() {
                    Ok(again) => {
                        self.source = Source::Asking(Mutex::new(again));
                        continue;
                    }
                    Err(why) => return Poll::Ready(Some(self.give_up(&why))),
                },
                Source::Asking(again) => {
                    let again = again.get_mut().unwrap_or_else(PoisonError::into_inner);
                    let (ask, found) = ready!(again.as_mut().poll(cx));
                    self.ask = ask;
                    match found {
                        Ok(source) => {
                            if matches!(source, Source::Remote(_)) {
                                self.scanner.finish();
                            }
                            self.source = source;
                            continue;
                        }
                        Err(why) => {
                            self.source = Source::Over;
                            return Poll::Ready(Some(self.give_up(&why)));
                        }
                    }
                }
            };
            if !items.is_empty() {
                return Poll::Ready(Some(items));
            }
        }
    }

    /// The events `data` completes.
    fn scan(&mut self, data: &[u8]) -> Vec<Item> {
        self.scanner.feed(data);
        let mut items = Vec::new();
        loop {
            let event = match self.scanner.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => return items,
                Err(err) => {
                    tracing::warn!(error = %err, "an event of another node's stream was dropped");
                    continue;
                }
            };
            let id = event
                .id
                .as_deref()
                .and_then(|id| id.parse::<EventId>().ok());
            if event.data.is_empty() {
                if let (Some(id), Some(retry)) = (id, event.retry) {
                    self.stream = Some(id.stream);
                    items.push(Item::Priming(id, retry));
                }
                continue;
            }
            items.push(self.message(id, Bytes::from(event.data)));
        }
    }

    /// A message relayed: notes its place and, for a response, its request answered.
    fn message(&mut self, id: Option<EventId>, message: Bytes) -> Item {
        if let Some(id) = id {
            self.stream = Some(id.stream);
            self.after = self.after.max(id.index);
        }
        let answered = protocol::answered_request(&message);
        let response = answered.is_some();
        if let Some(id) = answered {
            self.unanswered.retain(|r| *r != id);
        }
        Item::Message {
            id,
            message,
            response,
        }
    }

    /// The stream asked for again, wherever its session is held now.
    fn ask_again(&mut self) -> Result<Again, String> {
        self.breaks += 1;
        if self.breaks > BREAKS {
            return Err("the stream broke too often".into());
        }
        tracing::debug!(session_id = %self.ask.session, stream = ?self.stream, after = self.after, "relayed stream broke: asking for it again");
        // Once an event named the stream, a resumption of it; before, the forward again.
        if let Some(stream) = self.stream {
            self.ask.method = Method::GET;
            self.ask.last_event_id = Some(EventId::new(stream, self.after));
        }
        let server = Arc::clone(&self.server);
        let (mut ask, stream, after) = (self.ask.clone(), self.stream, self.after);
        Ok(Box::pin(async move {
            let found = async {
                let Some(nodes) = &server.nodes else {
                    return Err("no cluster".into());
                };
                match remote::reach(&server, nodes, &mut ask, None).await {
                    Ok(Reached::There(answer)) if answer.status() == StatusCode::OK => {
                        Ok(Source::Remote(answer.into_body()))
                    }
                    Ok(Reached::There(answer)) => Err(refusal(answer).await),
                    Ok(Reached::Here(session)) => here(&session, &ask, stream, after).await,
                    Err(reject) => Err(reject.message),
                }
            }
            .await;
            (ask, found)
        }))
    }

    /// Errors for every request still unanswered: the stream cannot be had any more.
    fn give_up(&mut self, why: &str) -> Vec<Item> {
        tracing::warn!(session_id = %self.ask.session, why, unanswered = self.unanswered.len(), "a relayed stream could not be had again: its requests get errors");
        let error = ErrorObject::new(
            code::INTERNAL_ERROR,
            format!(
                "the server lost this request's stream ({why}); it may or may not have been \
                 carried out"
            ),
        );
        std::mem::take(&mut self.unanswered)
            .into_iter()
            .map(|id| Item::Message {
                id: None,
                message: protocol::error_response(id, error.clone()),
                response: true,
            })
            .collect()
    }

    /// The stream as SSE, `first` ahead of it, made as the response's body is polled.
    fn sse(self, first: Vec<Item>, session: Option<http::HeaderValue>) -> Response<ResponseBody> {
        let keep_alive = KeepAlive::new(self.server.shared.config.keep_alive);
        let first = (!first.is_empty()).then(|| encode(&first));
        let relayed = Relayed {
            relay: self,
            first,
            keep_alive,
        };
        reply::relayed(Box::new(relayed), session)
    }

    /// JSON-response mode (S4, S5): the responses, once all came; the stream as SSE if
    /// anything else comes first.
    async fn json(
        mut self,
        is_batch: bool,
        session: Option<http::HeaderValue>,
    ) -> Response<ResponseBody> {
        let mut items = Vec::new();
        while let Some(more) = std::future::poll_fn(|cx| self.poll_items(cx)).await {
            let other = more.iter().any(|i| {
                matches!(
                    i,
                    Item::Message {
                        response: false,
                        ..
                    }
                )
            });
            items.extend(more);
            if other {
                return self.sse(items, session);
            }
        }
        let responses = items.into_iter().filter_map(|i| match i {
            Item::Message { message, .. } => Some(message),
            Item::Priming(..) => None,
        });
        reply::json(responses, is_batch)
    }
}

/// The stream of a request from a session held here now: its stream resumed after `after` once
/// an event named it; before, the request served here.
async fn here(
    session: &Arc<Session>,
    ask: &Ask,
    stream: Option<u64>,
    after: u64,
) -> Result<Source, String> {
    let (replay, reader) = match stream {
        Some(stream) => {
            let resumed = session
                .resume(EventId::new(stream, after))
                .await
                .map_err(|e| format!("{e:?}"))?;
            (resumed.events, resumed.reader)
        }
        None => {
            let body = mcp_jsonrpc::parse(&ask.body).map_err(|e| e.to_string())?;
            let charge = session
                .shared
                .inbound
                .charge(0)
                .ok_or("no room for the request")?;
            let mut posted = Some(Posted::new(Arc::clone(&ask.parts), body, charge));
            let forward = Some(ask.id.as_str());
            let opened = open(session, &mut posted, None, None, forward, 0);
            match opened.await.map_err(|e| format!("{e:?}"))? {
                Opened::Stream { reader, replay, .. } => (replay, reader),
                Opened::Accepted => return Err("the request has no stream".into()),
            }
        }
    };
    Ok(Source::Local(replay.into(), reader))
}

/// A relayed stream as its response's body polls it: what came first, then the relay's events,
/// and a keep-alive comment whenever none came for the configured time.
struct Relayed {
    relay: Relay,
    first: Option<Bytes>,
    keep_alive: KeepAlive,
}

impl Frames for Relayed {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(first));
        }
        match self.relay.poll_items(cx) {
            Poll::Ready(Some(items)) => {
                self.keep_alive.sent();
                Poll::Ready(Some(encode(&items)))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => self.keep_alive.poll(cx),
        }
    }
}

fn encode(items: &[Item]) -> Bytes {
    let mut out = BytesMut::new();
    for item in items {
        match item {
            Item::Priming(id, retry) => write_priming(&mut out, Some(*id), *retry),
            Item::Message { id, message, .. } => frame(&mut out, *id, message),
        }
    }
    out.freeze()
}

/// What a holder's refusal says.
async fn refusal(answer: Response<Incoming>) -> String {
    let status = answer.status();
    let body = http_body_util::Limited::new(answer.into_body(), 64 * 1024);
    let body = body.collect().await.map(|b| b.to_bytes());
    match body {
        Ok(body) => format!("{status}: {}", String::from_utf8_lossy(&body)),
        Err(_) => status.to_string(),
    }
}
