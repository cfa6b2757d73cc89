//! The keep-alive comments of an idle SSE body (S15), a served stream's or a relayed one's.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::{Instant, Sleep};

/// When an SSE body's next keep-alive comment is due: a period after its last frame. The timer
/// is set up the first time the body waits, which a reply answered at once never does.
pub(crate) struct KeepAlive {
    every: Option<Duration>,
    due: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl KeepAlive {
    /// Comments every `every` of idleness; none for `None`.
    pub(crate) fn new(every: Option<Duration>) -> Self {
        let due = every.map_or_else(Instant::now, |every| Instant::now() + every);
        KeepAlive {
            every,
            due,
            timer: None,
        }
    }

    /// A frame went out: the next comment is due a period from now.
    pub(crate) fn sent(&mut self) {
        if let Some(every) = self.every {
            self.due = Instant::now() + every;
            if let Some(timer) = &mut self.timer {
                timer.as_mut().reset(self.due);
            }
        }
    }

    /// A comment when one is due; else `Pending`, woken when it will be.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let Some(every) = self.every else {
            return Poll::Pending;
        };
        let due = self.due;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if timer.as_mut().poll(cx).is_ready() {
            self.due = Instant::now() + every;
            timer.as_mut().reset(self.due);
            return Poll::Ready(Some(Bytes::from_static(b": keep-alive\n\n")));
        }
        Poll::Pending
    }
}
