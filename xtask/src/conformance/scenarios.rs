//! Which scenarios run: the revisions, and the selection a command line makes among the
//! scenarios the suite lists (less those `conformance/README.md` excludes), under the names
//! filters match (`server/NAME`, `client/NAME`, `server-2026-07-28/NAME`...).

use anyhow::Result;

use super::Options;
use super::auth;
use super::exclusions;
use super::suite::Suite;

/// The protocol revision the suite tests.
pub(super) const SPEC_VERSION: &str = "2025-11-25";
/// The per-request revision.
pub(super) const MODERN_SPEC_VERSION: &str = "2026-07-28";
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
    /// Whether those are all the suite lists at [`SPEC_VERSION`], so that one run of the
    /// suite (`--suite all`) runs them.
    pub(super) server_all: bool,
    /// Client scenarios at [`SPEC_VERSION`].
    pub(super) client: Vec<String>,
    /// Server scenarios at [`MODERN_SPEC_VERSION`].
    pub(super) modern_server: Vec<String>,
    /// Whether those are all the suite lists at [`MODERN_SPEC_VERSION`].
    pub(super) modern_server_all: bool,
    /// Client scenarios at [`MODERN_SPEC_VERSION`].
    pub(super) modern_client: Vec<String>,
    /// The client's authorization runs.
    pub(super) auth: Vec<auth::Run>,
}

impl Selected {
    /// The scenarios `options` selects among those the suite lists, but for those
    /// `conformance/README.md` excludes (which fails if it excludes one the suite no longer
    /// lists). The client's `auth/*` scenarios are picked apart (`auth.rs`).
    pub(super) fn pick(suite: &Suite, options: &Options) -> Result<Selected> {
        let readme = std::fs::read_to_string(crate::project_root().join("conformance/README.md"))?;
        let excluded = exclusions::parse(&readme)?;
        let pick = |mode: &str, version: &str, label: &str| -> Result<Vec<String>> {
            let listed: Vec<String> = suite
                .listed(mode, version)?
                .into_iter()
                .filter(|s| !s.starts_with("auth/"))
                .collect();
            Ok(exclusions::apply(&excluded, mode, version, &listed)?
                .into_iter()
                .filter(|s| options.selects(&format!("{label}/{s}")))
                .collect())
        };
        let v = MODERN_SPEC_VERSION;
        let auth: Vec<auth::Run> = suite
            .auth_runs()?
            .into_iter()
            .filter(|run| options.selects(&run.label()))
            .collect();
        // One run of the suite serves a revision when nothing of it is left out.
        let all = |version: &str| {
            options.filters.is_empty()
                && !excluded
                    .iter()
                    .any(|e| e.mode == "server" && e.revision == version)
        };
        Ok(Selected {
            server: pick("server", SPEC_VERSION, "server")?,
            server_all: all(SPEC_VERSION),
            modern_server_all: all(v),
            client: pick("client", SPEC_VERSION, "client")?,
            modern_server: pick("server", v, &format!("server-{v}"))?,
            modern_client: pick("client", v, &format!("client-{v}"))?,
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
