//! The sessions of a service: lookup, the cap (S18) and the idle reaper.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use crate::core::context::Context;
use crate::core::session::{Ending, Session};

#[derive(Default)]
pub(crate) struct Sessions {
    sessions: Mutex<HashMap<Arc<str>, Arc<Session>>>,
    /// Stateless mode's sessions, one per POST in flight, by address: they have no id, and are
    /// here only so that shutdown can wait for them and end them (S23).
    transient: Mutex<HashMap<usize, Arc<Session>>>,
    reaper_started: AtomicBool,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn transient(&self) -> MutexGuard<'_, HashMap<usize, Arc<Session>>> {
        self.transient
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps a stateless session until it ends.
    pub(crate) fn insert_transient(&self, session: &Arc<Session>) {
        self.transient()
            .insert(address(session), Arc::clone(session));
    }

    /// The live sessions and, in stateless mode, the sessions of the POSTs in flight.
    pub(crate) fn all_with_transient(&self) -> Vec<Arc<Session>> {
        let mut all = self.all();
        all.extend(self.transient().values().cloned());
        all
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

    pub(crate) fn remove(&self, session: &Session) {
        if session.is_transient() {
            self.transient().remove(&address(session));
        } else {
            self.lock().remove(&session.id);
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
    pub(crate) fn start_reaper(&self, shared: &Arc<Context>) {
        if self.reaper_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let idle = shared.config.idle_timeout;
        let period = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
        let weak = Arc::downgrade(shared);
        tokio::spawn(reap(weak, period));
    }
}

fn address(session: &Session) -> usize {
    std::ptr::from_ref(session) as usize
}

/// Ends sessions idle for longer than the timeout (S18), until the service is gone.
async fn reap(shared: Weak<Context>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let timeout = u64::try_from(shared.config.idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let now = shared.now_ms();
        for session in shared.sessions.all() {
            if session.is_idle() && now.saturating_sub(session.last_active_ms()) >= timeout {
                tracing::debug!(parent: &session.span, "idle timeout");
                session.close(Ending::Abort).await;
            }
        }
    }
}
