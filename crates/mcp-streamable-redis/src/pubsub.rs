//! The node's one pub/sub connection: its inbox channel and the watch channels of the sessions
//! it has watches on, reconnected and subscribed again whenever it breaks.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{PubSubSink, PubSubStream};
use redis::{Msg, Value};
use tokio::sync::oneshot;
use tokio::time::{MissedTickBehavior, interval, sleep};

use crate::backend::{Shared, within};
use crate::error::{Error, Kind};
use crate::forward;

/// The first wait before connecting again; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(20);

/// The longest wait between two attempts to connect: a node is back within this of Redis.
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// Keeps the pub/sub connection up for as long as the backend lives. `ready` is told how the
/// first connection went, once its inbox is subscribed.
pub(crate) async fn run(shared: Arc<Shared>, ready: oneshot::Sender<Result<(), Error>>) {
    let mut ready = Some(ready);
    let mut backoff = MIN_BACKOFF;
    let mut connected_before = false;
    loop {
        let error = match connect(&shared).await {
            Ok((sink, stream)) => {
                backoff = MIN_BACKOFF;
                let mut connection = Connection {
                    shared: &shared,
                    sink,
                    subscribed: HashSet::new(),
                };
                connection.serve(stream, &mut ready, connected_before).await
            }
            Err(error) => error,
        };
        connected_before = true;
        match ready.take() {
            Some(ready) => {
                let _ = ready.send(Err(error));
                return;
            }
            None => tracing::warn!(%error, "redis pub/sub connection lost; reconnecting"),
        }
        sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn connect(shared: &Shared) -> Result<(PubSubSink, PubSubStream), Error> {
    let pubsub = within(
        shared.options.command_timeout,
        shared.client.get_async_pubsub(),
    )
    .await?;
    Ok(pubsub.split())
}

/// One pub/sub connection, from its first subscription until it breaks.
struct Connection<'a> {
    shared: &'a Arc<Shared>,
    sink: PubSubSink,
    /// The sessions whose watch channel is subscribed on this connection.
    subscribed: HashSet<String>,
}

impl Connection<'_> {
    /// Subscribes the inbox and the watched sessions, then hands out messages until the
    /// connection breaks; the error says how.
    async fn serve(
        &mut self,
        mut stream: PubSubStream,
        ready: &mut Option<oneshot::Sender<Result<(), Error>>>,
        reconnected: bool,
    ) -> Error {
        let inbox = self.shared.keys.inbox(&self.shared.options.node);
        if let Err(error) = within(
            self.shared.options.command_timeout,
            self.sink.subscribe(&inbox),
        )
        .await
        {
            return error;
        }
        if let Err(error) = self.reconcile().await {
            return error;
        }
        if let Some(ready) = ready.take() {
            let _ = ready.send(Ok(()));
        }
        if reconnected {
            // What was published while the connection was down is lost.
            self.shared.watches.news_lost();
        }
        let mut keepalive = interval(self.shared.options.lease.max(Duration::from_secs(1)));
        keepalive.set_missed_tick_behavior(MissedTickBehavior::Delay);
        keepalive.tick().await;
        loop {
            tokio::select! {
                message = stream.next() => match message {
                    Some(message) => self.dispatch(&inbox, &message),
                    None => return Error::new(Kind::Redis),
                },
                () = self.shared.subscriptions_changed.notified() => {
                    if let Err(error) = self.reconcile().await {
                        return error;
                    }
                }
                _ = keepalive.tick() => {
                    // A connection that died without a word (no FIN) shows here.
                    if let Err(error) = within(self.shared.options.command_timeout, self.sink.ping::<Value>()).await {
                        return error;
                    }
                }
            }
        }
    }

    /// Subscribes the channels of newly watched sessions and unsubscribes those of sessions
    /// no longer watched.
    async fn reconcile(&mut self) -> Result<(), Error> {
        let wanted = self.shared.watches.sessions();
        let keys = &self.shared.keys;
        let new: Vec<String> = wanted.difference(&self.subscribed).cloned().collect();
        let gone: Vec<String> = self.subscribed.difference(&wanted).cloned().collect();
        if !new.is_empty() {
            let channels: Vec<String> = new.iter().map(|s| keys.watch(s)).collect();
            within(
                self.shared.options.command_timeout,
                self.sink.subscribe(channels),
            )
            .await?;
            self.subscribed.extend(new);
        }
        if !gone.is_empty() {
            let channels: Vec<String> = gone.iter().map(|s| keys.watch(s)).collect();
            within(
                self.shared.options.command_timeout,
                self.sink.unsubscribe(channels),
            )
            .await?;
            for session in &gone {
                self.subscribed.remove(session);
            }
        }
        Ok(())
    }

    fn dispatch(&self, inbox: &str, message: &Msg) {
        let channel = message.get_channel_name();
        let payload = message.get_payload_bytes();
        if channel == inbox {
            forward::on_inbox(self.shared, payload);
        } else if let Some(session) = self.shared.keys.session_of_watch(channel) {
            match std::str::from_utf8(payload)
                .ok()
                .and_then(|s| s.parse().ok())
            {
                Some(stream) => self.shared.watches.written(session, stream),
                None => tracing::warn!(channel, "malformed news on a watch channel"),
            }
        }
    }
}
