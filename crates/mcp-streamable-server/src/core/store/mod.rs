//! The stores a session writes to, as the core sees them: the event store (its streams' events,
//! for resumption), the session store (its record, for another node or a restart), the queue
//! of a session's writes to them in the order of its sends, and the fence every write of a
//! session carries when several nodes share the stores.

pub(crate) mod event_store;
pub(crate) mod fence;
pub(crate) mod queue;
pub(crate) mod session_store;
