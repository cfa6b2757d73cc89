//! The `WWW-Authenticate` challenges of refusals, computed once per guard for every kind of
//! refusal and scheme, so that refusing a flood of bad requests builds no strings.

use http::HeaderValue;

use crate::{error::ConfigError, error::RefusalKind};

/// The scheme a request's credentials came with; a refusal's error goes in its challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Bearer,
    Dpop,
}

/// What every challenge of a guard says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    pub(crate) metadata_url: &'a str,
    /// The scopes to name, space-separated; empty for none.
    pub(crate) scope: &'a str,
    /// Whether `Bearer` is accepted.
    pub(crate) bearer: bool,
    /// The `algs` of the `DPoP` challenge, when DPoP is accepted.
    pub(crate) algs: Option<&'a str>,
}

/// The challenges of one guard, by kind and scheme.
#[derive(Debug)]
pub(crate) struct Challenges {
    values: Vec<Option<HeaderValue>>,
}

impl Challenges {
    pub(crate) fn new(context: Context<'_>) -> Result<Challenges, ConfigError> {
        let mut values = Vec::with_capacity(RefusalKind::ALL.len() * 2);
        for kind in RefusalKind::ALL {
            for scheme in [Scheme::Bearer, Scheme::Dpop] {
                let value = challenge(kind, scheme, context);
                if kind.has_challenge() && value.is_none() {
                    return Err(ConfigError::InvalidHeaderValue);
                }
                values.push(value);
            }
        }
        Ok(Challenges { values })
    }

    pub(crate) fn get(&self, kind: RefusalKind, scheme: Scheme) -> Option<HeaderValue> {
        let index = RefusalKind::ALL
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_default();
        let offset = usize::from(scheme == Scheme::Dpop);
        self.values[index * 2 + offset].clone()
    }
}

/// The `WWW-Authenticate` value for `kind` refusing credentials of `scheme`. Without
/// credentials ([`RefusalKind::MissingToken`]), a challenge for each scheme accepted, `Bearer`
/// first; otherwise the challenge of `scheme` alone, with the error. A challenge is
/// `Bearer resource_metadata="..."` or `DPoP algs="...", resource_metadata="..."`, then
/// `scope` when there are scopes to name (a 401 says which to ask for, a 403 which are missing),
/// then `error` and `error_description` when the kind has a code. `None` for a kind without a
/// challenge, or when the values cannot make a header (which the guard's builder rules out).
pub(crate) fn challenge(
    kind: RefusalKind,
    scheme: Scheme,
    context: Context<'_>,
) -> Option<HeaderValue> {
    if !kind.has_challenge() {
        return None;
    }
    let mut value = String::with_capacity(256);
    if kind == RefusalKind::MissingToken {
        if context.bearer || context.algs.is_none() {
            push_challenge(&mut value, Scheme::Bearer, context, None);
        }
        if context.algs.is_some() {
            push_challenge(&mut value, Scheme::Dpop, context, None);
        }
    } else {
        push_challenge(&mut value, scheme, context, Some(kind));
    }
    HeaderValue::from_str(&value).ok()
}

fn push_challenge(
    out: &mut String,
    scheme: Scheme,
    context: Context<'_>,
    error: Option<RefusalKind>,
) {
    if !out.is_empty() {
        out.push_str(", ");
    }
    match (scheme, context.algs) {
        (Scheme::Dpop, Some(algs)) => {
            out.push_str("DPoP algs=");
            push_quoted(out, algs);
            out.push_str(", ");
        }
        (Scheme::Dpop, None) => out.push_str("DPoP "),
        (Scheme::Bearer, _) => out.push_str("Bearer "),
    }
    out.push_str("resource_metadata=");
    push_quoted(out, context.metadata_url);
    if !context.scope.is_empty() {
        out.push_str(", scope=");
        push_quoted(out, context.scope);
    }
    if let Some(kind) = error
        && let Some(code) = kind.code()
    {
        out.push_str(", error=");
        push_quoted(out, code);
        out.push_str(", error_description=");
        push_quoted(out, kind.description());
    }
}

/// Appends `text` as an HTTP `quoted-string` (RFC 9110 §5.6.4): `"` and `\` are escaped with a
/// backslash. Control characters cannot be quoted; the guard's builder refuses them earlier.
pub(crate) fn push_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

    fn bearer_only(scope: &str) -> Context<'_> {
        Context {
            metadata_url: URL,
            scope,
            bearer: true,
            algs: None,
        }
    }

    #[test]
    fn challenges_row_by_row() {
        let rows = [
            (
                RefusalKind::MissingToken,
                "",
                format!(r#"Bearer resource_metadata="{URL}""#),
            ),
            (
                RefusalKind::MissingToken,
                "mcp:read",
                format!(r#"Bearer resource_metadata="{URL}", scope="mcp:read""#),
            ),
            (
                RefusalKind::MalformedToken,
                "",
                format!(
                    r#"Bearer resource_metadata="{URL}", error="invalid_token", error_description="the bearer credentials are malformed""#
                ),
            ),
            (
                RefusalKind::ExpiredToken,
                "a b",
                format!(
                    r#"Bearer resource_metadata="{URL}", scope="a b", error="invalid_token", error_description="the access token expired""#
                ),
            ),
            (
                RefusalKind::InsufficientScope,
                "a b",
                format!(
                    r#"Bearer resource_metadata="{URL}", scope="a b", error="insufficient_scope", error_description="the access token lacks a required scope""#
                ),
            ),
        ];
        for (kind, scope, expected) in rows {
            let value = challenge(kind, Scheme::Bearer, bearer_only(scope)).expect("a challenge");
            assert_eq!(value.to_str().unwrap(), expected, "{kind:?}");
        }
        let unavailable = challenge(RefusalKind::Unavailable, Scheme::Bearer, bearer_only("a"));
        assert_eq!(unavailable, None);
    }

    #[test]
    fn dpop_challenges_carry_algs_and_their_own_errors() {
        let both = Context {
            metadata_url: URL,
            scope: "mcp",
            bearer: true,
            algs: Some("ES256 RS256"),
        };
        let only = Context {
            bearer: false,
            ..both
        };
        let bearer = format!(r#"Bearer resource_metadata="{URL}", scope="mcp""#);
        let dpop = format!(r#"DPoP algs="ES256 RS256", resource_metadata="{URL}", scope="mcp""#);
        let rows = [
            (
                RefusalKind::MissingToken,
                Scheme::Bearer,
                both,
                format!("{bearer}, {dpop}"),
            ),
            (RefusalKind::MissingToken, Scheme::Dpop, only, dpop.clone()),
            (
                RefusalKind::InvalidDpopProof,
                Scheme::Dpop,
                both,
                format!(
                    r#"{dpop}, error="invalid_dpop_proof", error_description="the DPoP proof is invalid""#
                ),
            ),
            (
                RefusalKind::UseDpopNonce,
                Scheme::Dpop,
                only,
                format!(
                    r#"{dpop}, error="use_dpop_nonce", error_description="the DPoP proof needs the nonce this server provides""#
                ),
            ),
            (
                RefusalKind::TokenBinding,
                Scheme::Bearer,
                both,
                format!(
                    r#"{bearer}, error="invalid_token", error_description="the access token's key binding does not match the request""#
                ),
            ),
        ];
        for (kind, scheme, context, expected) in rows {
            let value = challenge(kind, scheme, context).expect("a challenge");
            assert_eq!(value.to_str().unwrap(), expected, "{kind:?} {scheme:?}");
        }
    }

    #[test]
    fn quoting_escapes_quotes_and_backslashes() {
        let mut out = String::new();
        push_quoted(&mut out, r#"a"b\c"#);
        assert_eq!(out, r#""a\"b\\c""#);
    }
}
