//! One server-sent event, owned ([`Event`]) or borrowed ([`EventRef`]).

use std::time::Duration;

/// One server-sent event: what a [`Scanner`](crate::Scanner) delivers and what a server encodes.
///
/// Build one with [`Event::new`] and the `with_` methods; encode it with
/// [`Event::encode`](crate::Event::encode). For hot paths that must not allocate, encode an
/// [`EventRef`] instead.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Event {
    /// The event type (the `event` field); `None` means the default type, `message`.
    ///
    /// The scanner reports an empty `event` field as `None`, as WHATWG does, and the encoder
    /// writes nothing for `Some("")`.
    pub name: Option<String>,
    /// The `id` field written in this event's block, if any.
    ///
    /// Blocks without an `id` field leave the stream's last event id as it was; see
    /// [`Scanner::last_event_id`](crate::Scanner::last_event_id).
    pub id: Option<String>,
    /// The data: the event's `data` lines joined with LF.
    pub data: String,
    /// The reconnection time given by a valid `retry` field in this event's block, if any.
    /// The wire carries whole milliseconds.
    pub retry: Option<Duration>,
}

impl Event {
    /// An event of the default type carrying `data`, without id or retry.
    pub fn new(data: impl Into<String>) -> Event {
        Event {
            data: data.into(),
            ..Event::default()
        }
    }

    /// Sets the event type (the `event` field).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Event {
        self.name = Some(name.into());
        self
    }

    /// Sets the event id, which a client sends back in `Last-Event-ID` to resume after it.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Event {
        self.id = Some(id.into());
        self
    }

    /// Sets the reconnection time the client should wait before it reconnects.
    #[must_use]
    pub fn with_retry(mut self, retry: Duration) -> Event {
        self.retry = Some(retry);
        self
    }

    /// A borrowed view of this event, for [`EventRef::encode`].
    pub fn as_ref(&self) -> EventRef<'_> {
        EventRef {
            name: self.name.as_deref(),
            id: self.id.as_deref(),
            data: &self.data,
            retry: self.retry,
        }
    }
}

/// A borrowed event, to encode without allocating.
///
/// Unlike [`Event`], its fields may be set directly:
///
/// ```
/// use bytes::BytesMut;
/// use mcp_sse::EventRef;
///
/// let mut buf = BytesMut::new();
/// let event = EventRef { id: Some("3_17"), data: r#"{"jsonrpc":"2.0","method":"ping"}"#, ..EventRef::default() };
/// event.encode(&mut buf)?;
/// assert_eq!(&buf[..], b"id: 3_17\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n\n");
/// # Ok::<(), mcp_sse::EncodeError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventRef<'a> {
    /// The event type (the `event` field); `None` or `Some("")` means the default, `message`.
    pub name: Option<&'a str>,
    /// The event id (the `id` field).
    pub id: Option<&'a str>,
    /// The data; CR, LF and CRLF in it split it into several `data` lines.
    pub data: &'a str,
    /// The reconnection time (the `retry` field), sent in whole milliseconds.
    pub retry: Option<Duration>,
}

impl<'a> EventRef<'a> {
    /// An event of the default type carrying `data`, without id or retry.
    pub const fn new(data: &'a str) -> EventRef<'a> {
        EventRef {
            name: None,
            id: None,
            data,
            retry: None,
        }
    }

    /// Sets the event type (the `event` field).
    #[must_use]
    pub const fn with_name(mut self, name: &'a str) -> EventRef<'a> {
        self.name = Some(name);
        self
    }

    /// Sets the event id.
    #[must_use]
    pub const fn with_id(mut self, id: &'a str) -> EventRef<'a> {
        self.id = Some(id);
        self
    }

    /// Sets the reconnection time.
    #[must_use]
    pub const fn with_retry(mut self, retry: Duration) -> EventRef<'a> {
        self.retry = Some(retry);
        self
    }
}

impl From<EventRef<'_>> for Event {
    fn from(event: EventRef<'_>) -> Event {
        Event {
            name: event.name.map(str::to_owned),
            id: event.id.map(str::to_owned),
            data: event.data.to_owned(),
            retry: event.retry,
        }
    }
}

impl<'a> From<&'a Event> for EventRef<'a> {
    fn from(event: &'a Event) -> EventRef<'a> {
        event.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_set_fields_and_views_agree() {
        let event = Event::new("x")
            .with_name("add")
            .with_id("0_1")
            .with_retry(Duration::from_secs(3));
        assert_eq!(event.name.as_deref(), Some("add"));
        assert_eq!(event.id.as_deref(), Some("0_1"));
        assert_eq!(event.data, "x");
        assert_eq!(event.retry, Some(Duration::from_secs(3)));

        let view = EventRef::new("x")
            .with_name("add")
            .with_id("0_1")
            .with_retry(Duration::from_secs(3));
        assert_eq!(event.as_ref(), view);
        assert_eq!(Event::from(view), event);
        assert_eq!(Event::new("y"), Event::from(EventRef::new("y")));
    }
}
