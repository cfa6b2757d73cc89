//! What every session of a service shares: the configuration, the clock, the sessions (lookup,
//! the cap with its eviction, the idle reaper, which also sheds the largest backlogs past the
//! server-wide budget), and whether the service is shutting down.
//!
//! A session holds its context, and the context holds its sessions: the one pair of files of
//! the core that name each other.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::core::budget::{Budget, Inbound};
use crate::core::config::Config;
use crate::core::error::Error;
use crate::core::session::{Ending, Session};

pub(crate) struct Context {
    pub(crate) config: Config,
    pub(crate) sessions: Sessions,
    /// What every session's outboxes hold together, and its bound (S22).
    pub(crate) budget: Arc<Budget>,
    /// What POSTs hold for applications that have not read them yet, and its bound (S22).
    pub(crate) inbound: Arc<Inbound>,
    epoch: Instant,
    shutting_down: AtomicBool,
}

impl Context {
    pub(crate) fn new(config: Config) -> Self {
        Context {
            budget: Arc::new(Budget::new(config.max_total_buffered_bytes)),
            inbound: Arc::new(Inbound::new(config.max_total_incoming_bytes)),
            config,
            sessions: Sessions::default(),
            epoch: tokio::time::Instant::now().into_std(),
            shutting_down: AtomicBool::new(false),
        }
    }

    /// Milliseconds since the service started, on tokio's clock (so paused-time tests see
    /// timeouts pass).
    pub(crate) fn now_ms(&self) -> u64 {
        let now = tokio::time::Instant::now().into_std();
        u64::try_from(now.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    pub(crate) fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    /// S23: refuses new work while the service shuts down, saying what is refused.
    pub(crate) fn refuse_when_shutting_down(&self, refused: &'static str) -> Result<(), Error> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::ShuttingDown(refused));
        }
        Ok(())
    }
}

#[derive(Default)]
pub(crate) struct Sessions {
    sessions: Mutex<HashMap<Arc<str>, Arc<Session>>>,
    /// Stateless mode's sessions, one per POST in flight, by address: they have no id, and are
    /// here only so that shutdown can wait for them and end them (S23).
    transient: Mutex<HashMap<usize, Arc<Session>>>,
    /// How many sessions `sessions` holds, read without its lock (a session's lock may be held).
    live: AtomicUsize,
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
        self.live.load(Ordering::Relaxed)
    }

    pub(crate) fn all(&self) -> Vec<Arc<Session>> {
        self.lock().values().cloned().collect()
    }

    pub(crate) fn remove(&self, session: &Session) {
        if session.is_transient() {
            self.transient().remove(&address(session));
        } else {
            let mut map = self.lock();
            map.remove(&session.id);
            self.live.store(map.len(), Ordering::Relaxed);
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
        self.live.store(map.len(), Ordering::Relaxed);
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

/// Ends sessions idle for longer than the timeout (S18), every `period`, and sheds the largest
/// backlogs whenever a session finds the server-wide budget exceeded (S22), until the service
/// is gone.
async fn reap(shared: Weak<Context>, period: Duration) {
    let mut due = tokio::time::Instant::now() + period;
    loop {
        let Some(budget) = shared.upgrade().map(|s| Arc::clone(&s.budget)) else {
            return;
        };
        let over = tokio::time::timeout_at(due, budget.exceeded())
            .await
            .is_ok();
        drop(budget);
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if over {
            shed_largest(&shared);
            continue;
        }
        due = tokio::time::Instant::now() + period;
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

/// Sheds the largest sessions' backlogs, largest first, down to each one's share, while every
/// session's together exceed the server-wide budget. Looks at each session once.
fn shed_largest(shared: &Context) {
    let budget = &shared.budget;
    let mut sessions: Vec<(usize, Arc<Session>)> = shared
        .sessions
        .all_with_transient()
        .into_iter()
        .map(|s| (s.buffered(), s))
        .collect();
    sessions.sort_unstable_by_key(|(bytes, _)| std::cmp::Reverse(*bytes));
    let share = budget.share(sessions.len());
    for (bytes, session) in sessions {
        if !budget.is_over() || bytes <= share {
            break;
        }
        session.shed_to(share);
    }
}
