//! Whether a service should be sent traffic: the answer of its readiness probe.

/// Whether a service is ready for new traffic ([`StreamableHttpService::readiness`]), and if
/// not, why: what a readiness probe (Kubernetes', a load balancer's health check) answers.
///
/// [`StreamableHttpService::readiness`]: crate::StreamableHttpService::readiness
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Readiness {
    /// Serving: not shutting down, and with a cluster, this node holds its lease.
    Ready,
    /// Shutdown began ([`StreamableHttpService::shutdown`]): new sessions and streams are
    /// refused, and a node's sessions are being handed over or ended.
    ///
    /// [`StreamableHttpService::shutdown`]: crate::StreamableHttpService::shutdown
    ShuttingDown,
    /// With a cluster, this node's lease is not held ([`Lease::is_valid`]): the shared stores
    /// did not acknowledge a renewal in time (they do not answer, or the node was paused), so
    /// the node delivers nothing to its applications and requests reaching it only wait.
    ///
    /// [`Lease::is_valid`]: crate::Lease::is_valid
    LeaseNotHeld,
}

impl Readiness {
    /// Whether the service is ready.
    pub fn is_ready(self) -> bool {
        self == Readiness::Ready
    }

    /// Why, in a few words (a probe's response body): `ready`, `shutting down`, `lease not
    /// held`.
    pub fn reason(self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::ShuttingDown => "shutting down",
            Readiness::LeaseNotHeld => "lease not held",
        }
    }
}

impl std::fmt::Display for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reason())
    }
}
