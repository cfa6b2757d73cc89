//! The `WWW-Authenticate: Bearer ...` (or `DPoP ...`) challenge of a 401 or 403 (RFC 6750,
//! section 3; RFC 9449, section 7.1; RFC 9728, section 5.1): its `resource_metadata`, `scope`
//! and `error`.

/// The parameters of a Bearer or DPoP challenge this crate acts on.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) resource_metadata: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// The Bearer and DPoP challenges in a header value; other schemes' are skipped.
    pub(crate) fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let mut bearer = false;
        let mut rest = header.trim_start();
        while !rest.is_empty() {
            let (token, after) = take_token(rest);
            let after = after.trim_start();
            if let Some(value) = after.strip_prefix('=') {
                let (value, after) = take_value(value.trim_start());
                if bearer {
                    challenge.set(token, value);
                }
                rest = skip_comma(after);
            } else {
                // A scheme name starts a new challenge.
                bearer = token.eq_ignore_ascii_case("bearer") || token.eq_ignore_ascii_case("dpop");
                rest = skip_comma(after);
            }
        }
        challenge
    }

    /// Whether the challenge asks for more scope (RFC 6750, section 3.1).
    pub(crate) fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    fn set(&mut self, name: &str, value: String) {
        let slot = match name.to_ascii_lowercase().as_str() {
            "resource_metadata" => &mut self.resource_metadata,
            "scope" => &mut self.scope,
            "error" => &mut self.error,
            _ => return,
        };
        *slot = Some(value);
    }
}

fn take_token(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
        .unwrap_or(s.len());
    s.split_at(end)
}

/// A quoted string (with `\` escapes) or a token.
fn take_value(s: &str) -> (String, &str) {
    let Some(quoted) = s.strip_prefix('"') else {
        let (token, rest) = take_token(s);
        return (token.to_owned(), rest);
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            '"' => return (value, &quoted[i + 1..]),
            c => value.push(c),
        }
    }
    (value, "")
}

fn skip_comma(s: &str) -> &str {
    let s = s.trim_start();
    s.strip_prefix(',').unwrap_or(s).trim_start()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parameters_are_read() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:write files:read", resource_metadata="https://r.example/.well-known/oauth-protected-resource/mcp""#,
        );
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("mcp:write files:read"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://r.example/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn other_schemes_tokens_and_escapes() {
        let c = Challenge::parse(
            r#"Basic realm="x", scope="not-this", Bearer realm="a \"b\"", error=invalid_token,scope=read"#,
        );
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.resource_metadata, None);
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        assert_eq!(Challenge::parse(""), Challenge::default());
        let unterminated = Challenge::parse(r#"Bearer scope="a b"#);
        assert_eq!(unterminated.scope.as_deref(), Some("a b"));
        let dpop = Challenge::parse(r#"DPoP algs="ES256", resource_metadata="https://r/m""#);
        assert_eq!(dpop.resource_metadata.as_deref(), Some("https://r/m"));
    }
}
