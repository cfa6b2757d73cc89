//! Rate limits per client (S26): what a POST costs, the quotas it is charged to, and the store
//! that keeps each client's buckets, in this process or shared by several nodes.
//!
//! The algorithm is GCRA (the generic cell rate algorithm, as ATM networks and `governor`
//! use it): a bucket is one number, the theoretical arrival time (TAT) of its next request. A
//! request of cost `c` moves it to `max(TAT, now) + c * interval` and is let through when that
//! is at most `burst * interval` ahead of now. One number per bucket, updated in one step, is
//! what a shared store can keep in one script; a token bucket needs two (tokens and time).

mod memory;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use mcp_jsonrpc::Message;

pub use memory::{DEFAULT_MAX_RATE_BUCKETS, InMemoryRateStore};

/// How fast one client may go in one bucket: `burst` requests at once, then one every
/// `interval` (the bucket refills one request per interval).
///
/// ```
/// use std::time::Duration;
/// use mcp_streamable_server::Quota;
///
/// let quota = Quota::per_second(20).burst(40);
/// assert_eq!(quota.interval(), Duration::from_millis(50));
/// assert_eq!(quota.burst_size(), 40);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    interval: Duration,
    burst: u32,
}

impl Quota {
    /// `n` requests a second (at least 1), with a burst of `n`.
    pub fn per_second(n: u32) -> Quota {
        Quota::every(Duration::from_secs(1) / n.max(1)).burst(n)
    }

    /// `n` requests a minute (at least 1), with a burst of `n`.
    pub fn per_minute(n: u32) -> Quota {
        Quota::every(Duration::from_secs(60) / n.max(1)).burst(n)
    }

    /// One request every `interval` (at least a microsecond), with a burst of one.
    pub fn every(interval: Duration) -> Quota {
        Quota {
            interval: interval.max(Duration::from_micros(1)),
            burst: 1,
        }
    }

    /// How many requests may come at once, from a full bucket (at least 1).
    pub fn burst(mut self, burst: u32) -> Quota {
        self.burst = burst.max(1);
        self
    }

    /// The time one request takes to refill.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How many requests may come at once.
    pub fn burst_size(&self) -> u32 {
        self.burst
    }
}

/// One bucket a request is charged to: a client's bucket for all its requests, or for one
/// method.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Bucket<'a> {
    /// Who: `owner …` (the session owner, or a verified principal's key), `ip …`, or
    /// `unidentified`.
    pub client: &'a str,
    /// Which: `*` for all requests, else a method.
    pub name: &'a str,
    /// Its quota.
    pub quota: Quota,
    /// What this request costs in it.
    pub cost: u32,
}

impl<'a> Bucket<'a> {
    /// A bucket of `client`'s, `name` (`*` or a method), charged `cost` under `quota`: for the
    /// tests of a store written elsewhere.
    pub fn new(client: &'a str, name: &'a str, quota: Quota, cost: u32) -> Bucket<'a> {
        Bucket {
            client,
            name,
            quota,
            cost,
        }
    }
}

/// What a [`RateStore`] decided: let through (every bucket charged), or refused (none charged)
/// with the time until it would be let through.
pub type RateFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<Duration>, RateError>> + Send + 'a>>;

/// Where the buckets are kept: [`InMemoryRateStore`] in this process, or a store several nodes
/// share (`mcp-streamable-redis`'s), so that a client's limit holds across all of them.
pub trait RateStore: Send + Sync + fmt::Debug + 'static {
    /// Charges every one of `buckets` its cost if each has room for it, and none of them
    /// otherwise: `Ok(None)` when charged, `Ok(Some(wait))` when refused, `wait` being how long
    /// until the request would fit. Buckets of the same client only.
    fn charge<'a>(&'a self, buckets: &'a [Bucket<'a>]) -> RateFuture<'a>;
}

/// A store that could not decide (a shared store unreachable). The server then lets the
/// request through and logs it: a limit is not worth an outage.
#[derive(Debug)]
pub struct RateError(Box<dyn std::error::Error + Send + Sync>);

impl RateError {
    /// A failure of the store, with its cause.
    pub fn new(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> RateError {
        RateError(cause.into())
    }
}

impl fmt::Display for RateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the rate store failed: {}", self.0)
    }
}

impl std::error::Error for RateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// The rate limits of [`Config::rate_limit`](crate::Config::rate_limit): quotas for all of a
/// client's requests and for single methods, kept in a [`RateStore`].
///
/// A client is the session owner or verified principal when there is one (feature `auth`),
/// else the IP address in the request's [`PeerAddr`](crate::PeerAddr) (which `serve` puts
/// there; behind a proxy or in axum, put the client's), else one `unidentified` client for
/// all. Each JSON-RPC request or notification a POST carries costs one in the quota for all
/// requests and one in its method's quota; responses (a client's answers to the server) cost
/// nothing, nor do GET streams, DELETE, and `subscriptions/listen`, which opens a stream
/// rather than makes a call. A POST over a quota is answered 429 with `Retry-After` and a
/// JSON-RPC error, and nothing of it is charged or delivered.
///
/// ```
/// use mcp_streamable_server::{Config, Quota, RateLimit};
///
/// let limits = RateLimit::new()
///     .requests(Quota::per_second(50).burst(100))
///     .method("tools/call", Quota::per_minute(60).burst(10));
/// let config = Config::default().rate_limit(limits);
/// # let _ = config;
/// ```
#[derive(Clone, Debug)]
pub struct RateLimit {
    all: Option<Quota>,
    methods: Vec<(String, Quota)>,
    store: Arc<dyn RateStore>,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit::new()
    }
}

/// The method that opens a listen stream (2026-07-28), never charged.
const LISTEN: &str = "subscriptions/listen";

impl RateLimit {
    /// No quota yet, kept in an [`InMemoryRateStore`].
    pub fn new() -> RateLimit {
        RateLimit {
            all: None,
            methods: Vec::new(),
            store: Arc::new(InMemoryRateStore::default()),
        }
    }

    /// The quota of all of a client's requests and notifications.
    pub fn requests(mut self, quota: Quota) -> RateLimit {
        self.all = Some(quota);
        self
    }

    /// The quota of one method (`tools/call`, say), charged besides the one for all requests;
    /// set again, it replaces the method's quota.
    pub fn method(mut self, method: impl Into<String>, quota: Quota) -> RateLimit {
        let method = method.into();
        self.methods.retain(|(m, _)| *m != method);
        self.methods.push((method, quota));
        self
    }

    /// Keeps the buckets in `store` (by default in this process).
    pub fn store(mut self, store: impl RateStore) -> RateLimit {
        self.store = Arc::new(store);
        self
    }

    /// Charges `client` for `messages`: `None` when let through, else how long until it would
    /// be. A store failure lets the request through, logged.
    pub(crate) async fn charge(&self, client: &str, messages: &[Message]) -> Option<Duration> {
        let buckets = self.buckets(client, messages);
        if buckets.is_empty() {
            return None;
        }
        match self.store.charge(&buckets).await {
            Ok(wait) => wait,
            Err(err) => {
                tracing::warn!(error = %err, client, "rate limit not applied: the store failed");
                None
            }
        }
    }

    /// The buckets `messages` are charged to, with their costs.
    fn buckets<'a>(&'a self, client: &'a str, messages: &'a [Message]) -> Vec<Bucket<'a>> {
        let calls = || {
            messages
                .iter()
                .filter_map(Message::method)
                .filter(|m| *m != LISTEN)
        };
        let mut buckets = Vec::new();
        let mut add = |name: &'a str, quota: Quota, cost: usize| {
            if cost > 0 {
                let cost = u32::try_from(cost).unwrap_or(u32::MAX);
                buckets.push(Bucket {
                    client,
                    name,
                    quota,
                    cost,
                });
            }
        };
        if let Some(quota) = self.all {
            add("*", quota, calls().count());
        }
        for (method, quota) in &self.methods {
            add(method, *quota, calls().filter(|m| m == method).count());
        }
        buckets
    }
}

#[cfg(test)]
mod tests {
    use mcp_jsonrpc::{Notification, Request, Response, to_raw_value};

    use super::*;

    fn costs(limit: &RateLimit, messages: &[Message]) -> Vec<(String, u32)> {
        let buckets = limit.buckets("ip 192.0.2.1", messages);
        buckets
            .iter()
            .map(|b| (b.name.to_owned(), b.cost))
            .collect()
    }

    #[test]
    fn requests_and_notifications_cost_one_each_and_answers_and_listen_streams_nothing() {
        let limit = RateLimit::new()
            .requests(Quota::per_second(10))
            .method("tools/call", Quota::per_minute(5));
        let call = |id: i64| -> Message { Request::new(id, "tools/call", None).into() };
        let batch = [
            call(1),
            call(2),
            Request::new(3, "tools/list", None).into(),
            Notification::new("notifications/initialized", None).into(),
            Response::success(9.into(), to_raw_value(&1).unwrap()).into(),
            Request::new(4, LISTEN, None).into(),
        ];
        assert_eq!(
            costs(&limit, &batch),
            [("*".to_owned(), 4), ("tools/call".to_owned(), 2)]
        );
        let answer: Message = Response::success(9.into(), to_raw_value(&1).unwrap()).into();
        assert!(costs(&limit, &[answer]).is_empty());
        assert_eq!(
            costs(&limit, &[Request::new(1, "ping", None).into()]),
            [("*".to_owned(), 1)]
        );
    }

    #[test]
    fn a_method_set_again_replaces_its_quota() {
        let limit = RateLimit::new()
            .method("tools/call", Quota::per_second(1))
            .method("tools/call", Quota::per_second(2));
        assert_eq!(limit.methods, [("tools/call".into(), Quota::per_second(2))]);
    }

    #[test]
    fn quotas_are_never_zero() {
        assert_eq!(Quota::per_second(0), Quota::per_second(1));
        assert_eq!(
            Quota::every(Duration::ZERO).interval(),
            Duration::from_micros(1)
        );
        assert_eq!(Quota::per_minute(3).burst(0).burst_size(), 1);
        assert_eq!(Quota::per_minute(3).interval(), Duration::from_secs(20));
    }
}
