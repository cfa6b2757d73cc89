//! The idle bound of an SSE connection: how long it may say nothing (no event, no comment)
//! before it counts as broken.

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The silence on one connection of a stream. One timer serves the whole connection and is
/// moved on only when it fires early: each frame just notes the time, so that a busy stream
/// costs no timer work per frame.
///
/// Until reading first has to wait, every frame came at once and the connection counts as
/// heard from just now: no clock is read and no timer made, which is the whole life of a
/// POST's reply that came with its head.
#[derive(Debug)]
pub(crate) struct Silence {
    idle: Option<Duration>,
    /// When the connection last said something, from the first wait on.
    heard: Option<Instant>,
    /// Armed at the first wait, for the connection's life.
    timer: Option<Pin<Box<Sleep>>>,
}

impl Silence {
    /// The silence of a connection that just began, bounded by `idle` (`None`: unbounded).
    pub(crate) fn new(idle: Option<Duration>) -> Silence {
        Silence {
            idle,
            heard: None,
            timer: None,
        }
    }

    /// The connection said something.
    pub(crate) fn heard(&mut self) {
        if let Some(heard) = &mut self.heard {
            *heard = Instant::now();
        }
    }

    /// Resolves once the connection has been silent for the bound; never without one.
    pub(crate) async fn too_long(&mut self) {
        let Some(idle) = self.idle else {
            return std::future::pending().await;
        };
        let heard = *self.heard.get_or_insert_with(Instant::now);
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(heard + idle)));
        loop {
            timer.as_mut().await;
            let deadline = self.heard.unwrap_or(heard) + idle;
            if deadline <= Instant::now() {
                return;
            }
            // Heard from since the timer was set: wait for the rest.
            timer.as_mut().reset(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn silence_counts_from_the_last_frame() {
        let mut silence = Silence::new(Some(Duration::from_secs(10)));
        let first = tokio::time::timeout(Duration::from_secs(8), silence.too_long()).await;
        assert!(first.is_err(), "8 s of a 10 s bound");
        silence.heard();
        let heard = Instant::now();
        silence.too_long().await;
        let waited = heard.elapsed();
        assert!(
            waited >= Duration::from_secs(10) && waited < Duration::from_millis(10_010),
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn frames_before_the_first_wait_count_as_just_now() {
        let mut silence = Silence::new(Some(Duration::from_secs(10)));
        silence.heard();
        tokio::time::sleep(Duration::from_secs(30)).await;
        // Reading had not waited yet: the bound counts from this wait.
        let start = Instant::now();
        silence.too_long().await;
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_secs(10) && waited < Duration::from_millis(10_010),
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_unbounded_silence_never_ends() {
        let mut silence = Silence::new(None);
        let day = Duration::from_secs(86_400);
        let waited = tokio::time::timeout(day, silence.too_long()).await;
        assert!(waited.is_err());
    }
}
