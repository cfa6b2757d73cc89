//! The idle bound of an SSE connection: how long it may say nothing (no event, no comment)
//! before it counts as broken.

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The silence on one connection of a stream. One timer serves the whole connection and is
/// moved on only when it fires early: each frame just notes the time, so that a busy stream
/// costs no timer work per frame.
#[derive(Debug)]
pub(crate) struct Silence {
    idle: Option<Duration>,
    heard: Instant,
}

impl Silence {
    /// The silence of a connection that just began, bounded by `idle` (`None`: unbounded).
    pub(crate) fn new(idle: Option<Duration>) -> Silence {
        Silence {
            idle,
            heard: Instant::now(),
        }
    }

    /// The connection said something.
    pub(crate) fn heard(&mut self) {
        if self.idle.is_some() {
            self.heard = Instant::now();
        }
    }

    /// Resolves once the connection has been silent for the bound; never without one. `timer`
    /// is the connection's timer, made with [`timer`](Silence::timer).
    pub(crate) async fn too_long(&self, mut timer: Pin<&mut Sleep>) {
        let Some(idle) = self.idle else {
            return std::future::pending().await;
        };
        loop {
            timer.as_mut().await;
            let deadline = self.heard + idle;
            if deadline <= Instant::now() {
                return;
            }
            // Heard from since the timer was set: wait for the rest.
            timer.as_mut().reset(deadline);
        }
    }

    /// A timer for [`too_long`](Silence::too_long); it is armed on its first poll, so an
    /// unbounded silence never registers one.
    pub(crate) fn timer(&self) -> Sleep {
        tokio::time::sleep_until(self.heard + self.idle.unwrap_or(Duration::ZERO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn silence_counts_from_the_last_frame() {
        let mut silence = Silence::new(Some(Duration::from_secs(10)));
        let timer = silence.timer();
        tokio::pin!(timer);
        tokio::time::sleep(Duration::from_secs(8)).await;
        silence.heard();
        let heard = Instant::now();
        silence.too_long(timer.as_mut()).await;
        let waited = heard.elapsed();
        assert!(
            waited >= Duration::from_secs(10) && waited < Duration::from_millis(10_010),
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_unbounded_silence_never_ends() {
        let silence = Silence::new(None);
        let timer = silence.timer();
        tokio::pin!(timer);
        let day = Duration::from_secs(86_400);
        let waited = tokio::time::timeout(day, silence.too_long(timer.as_mut())).await;
        assert!(waited.is_err());
    }
}
