//! The client's authorization scenarios (`auth/*`, issue 18): every scored one the suite lists,
//! at each revision it lists it for, and the extensions (client credentials, DPoP,
//! enterprise-managed authorization, workload identity federation). The client
//! authorizes itself with `mcp-streamable-oauth` (`examples/conformance_client.rs`).

use anyhow::{Result, bail};

/// The extension scenarios run besides the scored ones: client credentials (SEP-1046), DPoP
/// (RFC 9449), enterprise-managed authorization (ID-JAG) and workload identity federation.
const EXTENSIONS: &[&str] = &[
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/enterprise-managed-authorization",
    "auth/wif-jwt-bearer",
];

/// The scored scenarios a run must include: were a new suite version to drop one, the run
/// fails instead of silently testing less. New ones run without being named here.
const REQUIRED: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
];

/// One run of the suite: a scenario at a revision, or without one for an extension (the suite
/// skips an extension asked for at a revision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Run {
    pub(super) name: String,
    pub(super) version: Option<String>,
}

impl Run {
    /// The name filters match: `client/auth/NAME@VERSION` (`@extension` for an extension).
    pub(super) fn label(&self) -> String {
        let version = self.version.as_deref().unwrap_or("extension");
        format!("client/{}@{version}", self.name)
    }
}

/// The runs, from the suite's `list --client`; fails if a required scenario is missing.
pub(super) fn runs(listed: &str) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    let mut names = Vec::new();
    for (name, versions) in listed.lines().filter_map(scenario) {
        if !name.starts_with("auth/") {
            continue;
        }
        names.push(name.to_owned());
        if versions.contains(&"extension") {
            if EXTENSIONS.contains(&name) {
                runs.push(Run {
                    name: name.to_owned(),
                    version: None,
                });
            }
            continue;
        }
        runs.extend(versions.iter().map(|v| Run {
            name: name.to_owned(),
            version: Some((*v).to_owned()),
        }));
    }
    let missing: Vec<&&str> = REQUIRED
        .iter()
        .chain(EXTENSIONS)
        .filter(|r| !names.iter().any(|n| n == **r))
        .collect();
    if !missing.is_empty() {
        bail!("the suite has no client scenario named {missing:?}");
    }
    Ok(runs)
}

/// `  - auth/x [2025-11-25,2026-07-28]` as its name and revisions.
fn scenario(line: &str) -> Option<(&str, Vec<&str>)> {
    let rest = line.trim().strip_prefix("- ")?;
    let (name, versions) = rest.split_once(' ')?;
    let versions = versions.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some((name, versions.split(',').map(str::trim).collect()))
}

/// The revisions of `runs`, in the order first met (`None` for the extensions).
pub(super) fn versions(runs: &[Run]) -> Vec<Option<String>> {
    let mut versions: Vec<Option<String>> = Vec::new();
    for run in runs {
        if !versions.contains(&run.version) {
            versions.push(run.version.clone());
        }
    }
    versions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(extra: &str) -> String {
        let mut listed = String::from("Client scenarios (test against a client):\n");
        listed.push_str("  - initialize [2025-06-18,2025-11-25]\n");
        for name in REQUIRED {
            listed.push_str(&format!("  - {name} [2025-11-25,2026-07-28]\n"));
        }
        // An extension this project has not chosen to run yet.
        for name in EXTENSIONS.iter().chain(&["auth/new-extension"]) {
            listed.push_str(&format!("  - {name} [extension]\n"));
        }
        listed.push_str(extra);
        listed
    }

    #[test]
    fn every_scored_scenario_at_each_revision_and_the_chosen_extensions() {
        let runs = runs(&listing("  - auth/new-one [2026-07-28]\n")).unwrap();
        assert_eq!(runs.len(), REQUIRED.len() * 2 + EXTENSIONS.len() + 1);
        assert!(
            !runs
                .iter()
                .any(|r| r.name == "initialize" || r.name == "auth/new-extension")
        );
        let new = runs.iter().find(|r| r.name == "auth/new-one").unwrap();
        assert_eq!(new.label(), "client/auth/new-one@2026-07-28");
        let jwt = runs
            .iter()
            .find(|r| r.name == "auth/client-credentials-jwt")
            .unwrap();
        assert_eq!(jwt.version, None);
        assert_eq!(jwt.label(), "client/auth/client-credentials-jwt@extension");
        for chosen in ["auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer"] {
            let run = runs.iter().find(|r| r.name == chosen).unwrap();
            assert_eq!(run.version, None);
        }
        assert_eq!(
            versions(&runs),
            [Some("2025-11-25".into()), Some("2026-07-28".into()), None]
        );
    }

    #[test]
    fn a_missing_scenario_fails_the_run() {
        let listed = listing("").replace("  - auth/iss-normalized [2025-11-25,2026-07-28]\n", "");
        let error = runs(&listed).unwrap_err().to_string();
        assert!(error.contains("auth/iss-normalized"), "{error}");
    }
}
