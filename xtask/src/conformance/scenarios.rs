//! Which scenarios run: the revisions, the scenario lists this command keeps itself, and the
//! selection a command line makes among them and the suite's own lists, under the names
//! filters match (`server/NAME`, `client/NAME`, `server-2026-07-28/NAME`...).

use anyhow::Result;

use super::Options;
use super::auth;
use super::suite::Suite;

/// The protocol revision the suite tests.
pub(super) const SPEC_VERSION: &str = "2025-11-25";
/// The client scenarios run, in order.
const CLIENT_SCENARIOS: &[&str] = &["initialize", "tools_call", "sse-retry"];
/// The per-request revision.
pub(super) const MODERN_SPEC_VERSION: &str = "2026-07-28";
/// The server scenarios of 2026-07-28 that test the transport, run one by one. The others test
/// what an application answers (MRTR, caching, subscriptions), which is not this project's.
pub(super) const MODERN_SERVER_SCENARIOS: &[&str] = &[
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "http-header-validation",
    "tools-call-with-progress",
];
/// The client scenarios of 2026-07-28 that test the transport.
pub(super) const MODERN_CLIENT_SCENARIOS: &[&str] = &["request-metadata", "http-standard-headers"];
/// Server scenarios a full run must include: were a new suite version to stop running one of
/// these at 2025-11-25, the run fails instead of silently testing less.
pub(super) const REQUIRED_SERVER_SCENARIOS: &[&str] = &[
    "server-initialize",
    "server-session-lifecycle",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// The scenarios a command line selected, mode by mode.
#[derive(Debug)]
pub(super) struct Selected {
    /// Server scenarios at [`SPEC_VERSION`], as the suite lists them.
    pub(super) server: Vec<String>,
    /// Client scenarios at [`SPEC_VERSION`].
    pub(super) client: Vec<&'static str>,
    /// Server scenarios at [`MODERN_SPEC_VERSION`].
    pub(super) modern_server: Vec<String>,
    /// Client scenarios at [`MODERN_SPEC_VERSION`].
    pub(super) modern_client: Vec<&'static str>,
    /// The client's authorization runs.
    pub(super) auth: Vec<auth::Run>,
}

impl Selected {
    /// The scenarios `options` selects, among those the suite lists and this command's own.
    pub(super) fn pick(suite: &Suite, options: &Options) -> Result<Selected> {
        let server: Vec<String> = suite
            .server_scenarios()?
            .into_iter()
            .filter(|s| options.selects(&format!("server/{s}")))
            .collect();
        let client: Vec<&str> = CLIENT_SCENARIOS
            .iter()
            .copied()
            .filter(|s| options.selects(&format!("client/{s}")))
            .collect();
        let modern_server: Vec<String> = MODERN_SERVER_SCENARIOS
            .iter()
            .filter(|s| options.selects(&format!("server-{MODERN_SPEC_VERSION}/{s}")))
            .map(|s| s.to_string())
            .collect();
        let modern_client: Vec<&str> = MODERN_CLIENT_SCENARIOS
            .iter()
            .copied()
            .filter(|s| options.selects(&format!("client-{MODERN_SPEC_VERSION}/{s}")))
            .collect();
        let auth: Vec<auth::Run> = suite
            .auth_runs()?
            .into_iter()
            .filter(|run| options.selects(&run.label()))
            .collect();
        Ok(Selected {
            server,
            client,
            modern_server,
            modern_client,
            auth,
        })
    }

    /// Prints the selected scenarios' names, for `--list`.
    pub(super) fn print(&self) {
        self.server.iter().for_each(|s| println!("server/{s}"));
        self.client.iter().for_each(|s| println!("client/{s}"));
        self.auth.iter().for_each(|run| println!("{}", run.label()));
        let v = MODERN_SPEC_VERSION;
        self.modern_server
            .iter()
            .for_each(|s| println!("server-{v}/{s}"));
        self.modern_client
            .iter()
            .for_each(|s| println!("client-{v}/{s}"));
    }

    pub(super) fn is_empty(&self) -> bool {
        self.server.is_empty()
            && self.client.is_empty()
            && self.modern_server.is_empty()
            && self.modern_client.is_empty()
            && self.auth.is_empty()
    }
}
