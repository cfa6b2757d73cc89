//! The sessions of a service: lookup, the cap (S18) and the idle reaper.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use crate::service::Shared;
use crate::session::Session;

#[derive(Default)]
pub(crate) struct Registry {
    sessions: Mutex<HashMap<Arc<str>, Arc<Session>>>,
    reaper_started: AtomicBool,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    pub(crate) fn all(&self) -> Vec<Arc<Session>> {
        self.lock().values().cloned().collect()
    }

    pub(crate) fn remove(&self, id: &str) {
        if !id.is_empty() {
            self.lock().remove(id);
        }
    }

    /// Adds `session` if the cap allows, after evicting the least recently used idle session
    /// when it is full; the evicted one is returned to be closed. `Err` when full of busy ones.
    pub(crate) fn insert(
        &self,
        session: Arc<Session>,
        max: usize,
    ) -> Result<Option<Arc<Session>>, ()> {
        let mut map = self.lock();
        let mut evicted = None;
        if map.len() >= max {
            let victim = map
                .values()
                .filter(|s| s.is_idle())
                .min_by_key(|s| s.last_active_ms())
                .cloned()
                .ok_or(())?;
            map.remove(&victim.id);
            evicted = Some(victim);
        }
        map.insert(Arc::clone(&session.id), session);
        Ok(evicted)
    }

    /// Starts the task that ends idle sessions, once per service.
    pub(crate) fn start_reaper(&self, shared: &Arc<Shared>) {
        if self.reaper_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let idle = shared.config.idle_timeout;
        let period = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
        let weak = Arc::downgrade(shared);
        tokio::spawn(reap(weak, period));
    }
}

/// Ends sessions idle for longer than the timeout (S18), until the service is gone.
async fn reap(shared: Weak<Shared>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let timeout = u64::try_from(shared.config.idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let now = shared.now_ms();
        for session in shared.registry.all() {
            if session.is_idle() && now.saturating_sub(session.last_active_ms()) >= timeout {
                tracing::debug!(parent: &session.span, "idle timeout");
                session.close().await;
            }
        }
    }
}
