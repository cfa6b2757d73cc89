//! Which protocol a message goes in (M7): the per-request protocol of 2026-07-28 or the
//! session-based one of 2025-03-26 to 2025-11-25, as the era setting, the message itself and
//! what the first request found out about the endpoint decide.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_jsonrpc::{INITIALIZE, Message, Notification, Request};

use crate::connection::Inner;
use crate::error::{Error, Kind, Unsupported};
use crate::exchange::{self, Shape, Verdict};
use crate::modern::{self, MODERN_VERSIONS};
use crate::send;

/// Which protocol the transport speaks for the messages it shapes itself, set with
/// [`ClientBuilder::era`](crate::ClientBuilder::era).
///
/// Whatever the setting, an application that sends `initialize` runs the session-based
/// lifecycle as it always did (except under [`Era::Modern`], which refuses it), and a request
/// whose `params._meta` already declares `io.modelcontextprotocol/protocolVersion` is sent the
/// per-request way: an application (such as rmcp) that speaks the 2026-07-28 protocol itself
/// runs unchanged over the transport. The setting decides what happens to the other requests.
///
/// ```no_run
/// use mcp_jsonrpc::{Message, Request};
/// use mcp_streamable_client::{Client, Era};
/// use mcp_transport::{Connection, Sender, Transport};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let client = Client::builder("http://127.0.0.1:8080/mcp")
///     .era(Era::Auto)
///     .client_info("example", "1.0.0")
///     .build()?;
/// let mut conn = client.clone().connect().await?;
/// // No `initialize`: the transport adds `_meta` and finds out what the server speaks.
/// conn.sender().send(Request::new(1, "tools/list", None).into()).await?;
/// let Some(Message::Response(tools)) = conn.recv().await? else { return Ok(()) };
/// println!("{tools:?}, found {:?}", client.era());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Era {
    /// Find out from the first request (the default). The transport sends it the per-request
    /// way, with the `_meta` members filled in; a success, or a refusal only a 2026-07-28
    /// server gives, means the endpoint speaks that protocol. A -32022 listing only
    /// session-based versions, or any other 400, 404 or 405, means it does not: the transport
    /// runs the session-based lifecycle itself (`initialize` with the
    /// [`client_info`](crate::ClientBuilder::client_info) and
    /// [`client_capabilities`](crate::ClientBuilder::client_capabilities), then
    /// `notifications/initialized`) and sends the request in that session. The answer is
    /// remembered by the [`Client`](crate::Client), for every connection made from it.
    #[default]
    Auto,
    /// Speak only the 2026-07-28 per-request protocol: every request gets the `_meta` members,
    /// `initialize` and responses are refused, and nothing falls back.
    Modern,
    /// Speak only the session-based protocol: messages go as the application wrote them, in the
    /// session its `initialize` starts.
    Legacy,
}

/// What the first request found out about the endpoint, with the version to speak there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    Modern(&'static str),
    Legacy(&'static str),
}

/// What a [`Client`](crate::Client) knows of its endpoint's era, shared by its connections.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    found: Mutex<Option<Found>>,
    /// Held while a request finds out, so that concurrent first requests, from any connection,
    /// probe the endpoint once.
    probing: tokio::sync::Mutex<()>,
}

impl Discovery {
    pub(crate) fn found(&self) -> Option<Found> {
        *self.found.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn remember(&self, found: Found) {
        let mut known = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        if *known != Some(found) {
            tracing::debug!(?found, "endpoint era found");
            *known = Some(found);
        }
    }

    /// The era spoken for the messages the transport shapes: the pinned one, or what
    /// [`Era::Auto`] found (`None` before that).
    pub(crate) fn era(&self, setting: Era) -> Option<Era> {
        match (setting, self.found()) {
            (Era::Auto, Some(Found::Modern(_))) => Some(Era::Modern),
            (Era::Auto, Some(Found::Legacy(_))) => Some(Era::Legacy),
            (Era::Auto, None) => None,
            (pinned, _) => Some(pinned),
        }
    }
}

/// The way a message the application did not shape goes.
#[derive(Debug, Clone, Copy)]
enum Lane {
    /// In the connection's session, as the session-based protocol has it (C1-C10).
    Session,
    /// Per request, in this version.
    Modern(&'static str),
    /// The endpoint is session-based and this connection has no session yet: start one.
    Start(&'static str),
    /// Nothing is known yet: the message finds out.
    Probe,
}

fn lane(inner: &Inner) -> Lane {
    let setting = inner.config().era;
    if setting == Era::Legacy || inner.session().is_started() {
        return Lane::Session;
    }
    match (setting, inner.discovery.found()) {
        (_, Some(Found::Modern(version))) => Lane::Modern(version),
        (Era::Modern, _) => Lane::Modern(MODERN_VERSIONS[0]),
        (_, Some(Found::Legacy(version))) => Lane::Start(version),
        (_, None) => Lane::Probe,
    }
}

/// Sends `message` in the protocol it belongs to.
pub(crate) async fn dispatch(inner: &Arc<Inner>, message: Message) -> Result<(), Error> {
    match message {
        Message::Request(request) if request.method == INITIALIZE => {
            if inner.config().era == Era::Modern {
                return Err(Error::new(Kind::Unsupported(Unsupported::Initialize)));
            }
            send::initialize(inner, request).await
        }
        Message::Request(request) => self::request(inner, request).await,
        Message::Notification(notification) => self::notification(inner, notification).await,
        Message::Response(response) => match lane(inner) {
            Lane::Modern(_) => Err(Error::new(Kind::Unsupported(Unsupported::Response))),
            _ => send::in_session(inner, response.into()).await,
        },
    }
}

async fn request(inner: &Arc<Inner>, request: Request) -> Result<(), Error> {
    if let Some(version) = modern::declared_version(request.params.as_deref()) {
        exchange::request(inner, request, Shape::AsIs(version), false).await?;
        return Ok(());
    }
    // Each turn moves on: probing decides the lane, starting a session leads to `Session`.
    loop {
        match lane(inner) {
            Lane::Session => return send::in_session(inner, request.into()).await,
            Lane::Modern(version) => {
                let verdict =
                    exchange::request(inner, request, Shape::Fill(version), false).await?;
                if let Verdict::Modern(version) = verdict {
                    inner.discovery.remember(Found::Modern(version));
                }
                return Ok(());
            }
            Lane::Start(version) => send::start_session(inner, version).await?,
            Lane::Probe => {
                let _probing = inner.discovery.probing.lock().await;
                if !matches!(lane(inner), Lane::Probe) {
                    // Found out by another request meanwhile.
                    continue;
                }
                let shape = Shape::Fill(MODERN_VERSIONS[0]);
                match exchange::request(inner, request.clone(), shape, true).await? {
                    Verdict::Modern(version) => {
                        inner.discovery.remember(Found::Modern(version));
                        return Ok(());
                    }
                    Verdict::Legacy(version) => {
                        tracing::debug!(version, "the endpoint is session-based; initializing");
                        inner.discovery.remember(Found::Legacy(version));
                    }
                    Verdict::Nothing => return Ok(()),
                }
            }
        }
    }
}

async fn notification(inner: &Arc<Inner>, notification: Notification) -> Result<(), Error> {
    if let Some(id) = modern::cancelled_request(&notification)
        && exchange::cancel(inner, &id)
    {
        tracing::debug!(%id, "request cancelled by closing its response stream");
        return Ok(());
    }
    let version = match modern::declared_version(notification.params.as_deref()) {
        Some(version) => version,
        None => match lane(inner) {
            Lane::Session | Lane::Start(_) => {
                return send::in_session(inner, notification.into()).await;
            }
            Lane::Modern(version) => version.to_owned(),
            Lane::Probe => MODERN_VERSIONS[0].to_owned(),
        },
    };
    if notification.method == modern::CANCELLED {
        // Its request is over, or was never per-request: in the 2026-07-28 protocol, closing
        // the stream is the cancellation and the notification is not posted.
        tracing::debug!("cancellation of a request no longer in flight; not posted");
        return Ok(());
    }
    exchange::notify(inner, notification, &version).await
}
