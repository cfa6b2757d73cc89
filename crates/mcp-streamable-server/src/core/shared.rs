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
use crate::core::health::Readiness;
use crate::core::session::{Ending, Session};

pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) sessions: Sessions,
    /// What every session's outboxes hold together, and its bound (S22).
    pub(crate) budget: Arc<Budget>,
    /// What POSTs hold for applications that have not read them yet, and its bound (S22).
    pub(crate) inbound: Arc<Inbound>,
    epoch: Instant,
    shutting_down: AtomicBool,
    /// Woken each time a session taken over from a dead node is ready.
    pub(crate) restored: tokio::sync::Notify,
    /// The empty id of every transient session, made once: `Arc::from("")` allocates.
    pub(crate) no_id: Arc<str>,
    #[cfg(feature = "otel")]
    pub(crate) telemetry: crate::core::telemetry::Telemetry,
}

impl Shared {
    pub(crate) fn new(#[allow(unused_mut)] mut config: Config) -> Self {
        #[cfg(feature = "otel")]
        let telemetry = config
            .telemetry
            .clone()
            .unwrap_or_else(crate::core::telemetry::Telemetry::global);
        #[cfg(feature = "otel")]
        crate::core::telemetry::store::measure(&mut config, &telemetry);
        let shared = Shared {
            #[cfg(feature = "otel")]
            telemetry,
            budget: Arc::new(Budget::new(config.max_total_buffered_bytes)),
            inbound: Arc::new(Inbound::new(config.max_total_incoming_bytes)),
            config,
            sessions: Sessions::default(),
            epoch: tokio::time::Instant::now().into_std(),
            shutting_down: AtomicBool::new(false),
            restored: tokio::sync::Notify::new(),
            no_id: Arc::from(""),
        };
        #[cfg(feature = "otel")]
        shared.telemetry.observe_buffers(
            Arc::downgrade(&shared.budget),
            Arc::downgrade(&shared.inbound),
        );
        shared
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

    /// Whether the service is ready for traffic (H2): not shutting down, and with a cluster,
    /// holding this node's lease. Shutdown is looked at first, so a node shutting down says so
    /// whatever its lease.
    pub(crate) fn readiness(&self) -> Readiness {
        if self.shutting_down.load(Ordering::Acquire) {
            return Readiness::ShuttingDown;
        }
        match &self.config.cluster {
            Some(cluster) if !cluster.lease().is_valid() => Readiness::LeaseNotHeld,
            _ => Readiness::Ready,
        }
    }

    /// S23: refuses new work while the service shuts down, saying what is refused.
    pub(crate) fn refuse_when_shutting_down(&self, refused: &'static str) -> Result<(), Error> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::ShuttingDown(refused));
        }
        Ok(())
    }
}

/// The session caps (S18).
#[derive(Clone, Copy)]
pub(crate) struct Caps {
    pub(crate) total: usize,
    pub(crate) per_client: Option<usize>,
}

/// The sessions by id, and how many each known client holds.
#[derive(Default)]
struct Table {
    by_id: HashMap<Arc<str>, Arc<Session>>,
    per_client: HashMap<Arc<str>, usize>,
}

impl Table {
    fn add(&mut self, session: Arc<Session>) {
        if let Some(client) = &session.client {
            *self.per_client.entry(Arc::clone(client)).or_default() += 1;
        }
        self.by_id.insert(Arc::clone(&session.id), session);
    }

    fn remove(&mut self, id: &str) -> Option<Arc<Session>> {
        let session = self.by_id.remove(id)?;
        if let Some(client) = &session.client
            && let Some(n) = self.per_client.get_mut(client)
        {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(client);
            }
        }
        Some(session)
    }

    fn held_by(&self, client: &str) -> usize {
        self.per_client.get(client).copied().unwrap_or(0)
    }

    /// The least recently used idle session of `client` (of anyone for `None`).
    fn lru_idle(&self, client: Option<&Arc<str>>) -> Option<Arc<Session>> {
        self.by_id
            .values()
            .filter(|s| client.is_none() || s.client.as_ref() == client)
            .filter(|s| s.is_idle())
            .min_by_key(|s| s.last_active_ms())
            .cloned()
    }

    /// Who gives way to `session` at a cap: `Ok(None)` when no cap is reached; else the least
    /// recently used idle session of its own client at the per-client cap, or at the total cap
    /// the client holding the most sessions' (anyone's, if that one has none idle).
    fn victim_for(&self, session: &Session, caps: Caps) -> Result<Option<Arc<Session>>, Error> {
        if let (Some(client), Some(cap)) = (&session.client, caps.per_client)
            && self.held_by(client) >= cap
        {
            return self
                .lru_idle(Some(client))
                .map(Some)
                .ok_or(Error::TooManySessionsForClient(cap));
        }
        if self.by_id.len() < caps.total {
            return Ok(None);
        }
        // The requester itself when it holds as many as anyone: ties go against it.
        let own = session.client.as_ref().map(|c| (c, self.held_by(c)));
        let largest = self
            .per_client
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(c, n)| match own {
                Some((own, held)) if held >= *n => own,
                _ => c,
            });
        largest
            .and_then(|c| self.lru_idle(Some(c)))
            .or_else(|| self.lru_idle(None))
            .map(Some)
            .ok_or(Error::TooManySessions)
    }
}

#[derive(Default)]
pub(crate) struct Sessions {
    sessions: Mutex<Table>,
    /// Stateless mode's sessions, one per POST in flight, by address: they have no id, and are
    /// here only so that shutdown can wait for them and end them (S23).
    transient: Mutex<HashMap<usize, Arc<Session>>>,
    /// How many sessions `sessions` holds, read without its lock (a session's lock may be held).
    live: AtomicUsize,
    reaper_started: AtomicBool,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, Table> {
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
        self.lock().by_id.get(id).cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    pub(crate) fn all(&self) -> Vec<Arc<Session>> {
        self.lock().by_id.values().cloned().collect()
    }

    pub(crate) fn remove(&self, session: &Session) {
        if session.is_transient() {
            self.transient().remove(&address(session));
        } else {
            let mut table = self.lock();
            table.remove(&session.id);
            self.live.store(table.by_id.len(), Ordering::Relaxed);
        }
    }

    /// Adds `session` if the caps allow, after evicting the session that gives way to it
    /// (`Table::victim_for`), which is returned to be closed; an error when a cap is reached
    /// and no session that could give way is idle.
    pub(crate) fn insert(
        &self,
        session: Arc<Session>,
        caps: Caps,
    ) -> Result<Option<Arc<Session>>, Error> {
        let mut table = self.lock();
        let evicted = table.victim_for(&session, caps)?;
        if let Some(victim) = &evicted {
            table.remove(&victim.id);
        }
        table.add(session);
        self.live.store(table.by_id.len(), Ordering::Relaxed);
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

fn address(session: &Session) -> usize {
    std::ptr::from_ref(session) as usize
}

/// The least time between two rounds of shedding the largest backlogs (S22).
const SHED_PAUSE: Duration = Duration::from_millis(10);

/// Ends sessions idle for longer than the timeout (S18), every `period`, and sheds the largest
/// backlogs whenever a session finds the server-wide budget exceeded (S22), until the service
/// is gone.
async fn reap(shared: Weak<Shared>, period: Duration) {
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
            drop(shared);
            // A round looks at every session: at most one per pause, however often sessions
            // under their share find the budget exceeded.
            tokio::time::sleep(SHED_PAUSE).await;
            continue;
        }
        due = tokio::time::Instant::now() + period;
        let timeout = u64::try_from(shared.config.idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let now = shared.now_ms();
        for session in shared.sessions.all() {
            if session.is_idle() && now.saturating_sub(session.last_active_ms()) >= timeout {
                tracing::debug!(parent: &session.span, "idle timeout");
                #[cfg(feature = "otel")]
                session.ends_by(crate::core::telemetry::EndCause::Idle);
                session.close(Ending::Abort).await;
            }
        }
    }
}

/// Sheds the largest sessions' backlogs, largest first, down to each one's share, while every
/// session's together exceed the server-wide budget. Looks at each session once.
fn shed_largest(shared: &Shared) {
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
