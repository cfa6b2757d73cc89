//! Listen streams (`subscriptions/listen`, 2026-07-28): the acknowledgement, the filter, the
//! subscription id on every notification, the graceful end, and the bus that carries a change
//! announced on one node to the streams of every node (L rows of `SPEC.md`).
//!
//! The transport serves no method itself: the application hands each `subscriptions/listen`
//! request to its node's [`Subscriptions`] and announces its changes there.

mod bus;
mod change;
mod filter;
mod subscriptions;

pub use bus::{BUS_CAPACITY, BusError, BusFuture, Heard, InMemoryBus, NotificationBus};
pub use change::Change;
pub use filter::{FilterError, SubscriptionFilter, Supported};
pub use subscriptions::{ACKNOWLEDGED_METHOD, LISTEN_METHOD, Subscriptions};
