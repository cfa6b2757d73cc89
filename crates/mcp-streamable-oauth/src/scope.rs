//! Which scope to ask for (MCP 2025-11-25, "Scope Selection Strategy"): the challenge's, else
//! all the resource's `scopes_supported`, else none; on a step-up, with every scope asked for
//! before (SEP-2350); `offline_access` added where the authorization server lists it
//! (SEP-2207), so that a refresh token comes with the grant.

/// The scope to ask for, or `None` to leave the parameter out.
pub(crate) fn select(
    challenged: Option<&str>,
    resource_scopes: Option<&[String]>,
    previously: &[String],
    offline_access: bool,
) -> Option<String> {
    let mut scopes: Vec<String> = Vec::new();
    let base: Vec<&str> = match (challenged, resource_scopes) {
        (Some(challenged), _) => challenged.split_whitespace().collect(),
        (None, Some(supported)) => supported.iter().map(String::as_str).collect(),
        (None, None) => Vec::new(),
    };
    for scope in base
        .into_iter()
        .chain(previously.iter().map(String::as_str))
    {
        add(&mut scopes, scope);
    }
    if scopes.is_empty() {
        return None;
    }
    if offline_access {
        add(&mut scopes, "offline_access");
    }
    Some(scopes.join(" "))
}

fn add(scopes: &mut Vec<String>, scope: &str) {
    if !scope.is_empty() && !scopes.iter().any(|s| s == scope) {
        scopes.push(scope.to_owned());
    }
}

/// Whether every scope in `wanted` is among `held`: asking again would not help.
pub(crate) fn covered(wanted: &str, held: &[String]) -> bool {
    wanted
        .split_whitespace()
        .all(|s| held.iter().any(|h| h == s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_challenge_first_then_the_resources_scopes_then_none() {
        let supported = owned(&["a", "b"]);
        assert_eq!(
            select(Some("x y"), Some(&supported), &[], false).as_deref(),
            Some("x y")
        );
        assert_eq!(
            select(None, Some(&supported), &[], false).as_deref(),
            Some("a b")
        );
        assert_eq!(select(None, None, &[], false), None);
        assert_eq!(
            select(None, None, &[], true),
            None,
            "offline_access alone is not asked"
        );
        assert_eq!(select(Some(""), None, &[], false), None);
    }

    #[test]
    fn a_step_up_keeps_what_was_asked_before_and_offline_access_when_offered() {
        let before = owned(&["mcp:basic"]);
        assert_eq!(
            select(Some("mcp:write"), None, &before, false).as_deref(),
            Some("mcp:write mcp:basic")
        );
        assert_eq!(
            select(Some("mcp:basic"), None, &before, true).as_deref(),
            Some("mcp:basic offline_access")
        );
    }

    #[test]
    fn covered_scopes() {
        let held = owned(&["a", "b"]);
        assert!(covered("a", &held));
        assert!(covered("b a", &held));
        assert!(!covered("a c", &held));
    }
}
