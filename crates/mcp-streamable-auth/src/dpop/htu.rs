//! The URL a proof's `htu` must name: the public origin this server is reached at, and the
//! request's path, compared after the normalizations RFC 9449 §4.3 asks for (RFC 3986 §6.2.2's
//! case, §6.2.3's default port and empty path), query and fragment left out.

use http::Uri;

use crate::error::ConfigError;

/// `scheme://host[:port]` lower-cased, the default port dropped: what a request's path is
/// appended to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin(String);

impl Origin {
    /// An origin from a URL without path (a `/` alone is allowed), query, fragment or user
    /// information.
    pub(crate) fn parse(url: &str) -> Result<Origin, ConfigError> {
        if url.contains(['?', '#']) {
            return Err(ConfigError::InvalidPublicOrigin);
        }
        let normalized = normalize(url).ok_or(ConfigError::InvalidPublicOrigin)?;
        // `scheme://host/`: the path is the last slash alone.
        match normalized.strip_suffix('/') {
            Some(origin) if origin.matches('/').count() == 2 => Ok(Origin(origin.to_owned())),
            _ => Err(ConfigError::InvalidPublicOrigin),
        }
    }

    /// Whether `htu` names this origin and `path` (the request's, as sent), query and fragment
    /// aside.
    pub(crate) fn matches(&self, htu: &str, path: &str) -> bool {
        let Some(htu) = normalize(htu) else {
            return false;
        };
        let path = if path.is_empty() { "/" } else { path };
        htu.len() == self.0.len() + path.len() && htu.starts_with(&self.0) && htu.ends_with(path)
    }
}

/// `scheme://host[:port]/path` of an absolute `http` or `https` URL: scheme and host in lower
/// case, the scheme's default port dropped, an empty path as `/`, query and fragment cut.
/// `None` for anything else (user information included).
fn normalize(url: &str) -> Option<String> {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let uri: Uri = url[..end].parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = uri.authority()?;
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return None;
    }
    let mut out = String::with_capacity(end + 1);
    out.push_str(&scheme);
    out.push_str("://");
    out.push_str(&authority.host().to_ascii_lowercase());
    if let Some(port) = authority.port_u16().filter(|port| *port != default_port) {
        out.push(':');
        out.push_str(&port.to_string());
    }
    let path = uri.path();
    out.push_str(if path.is_empty() { "/" } else { path });
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_compared_as_rfc_9449_asks() {
        let origin = Origin::parse("https://MCP.example.com:443").unwrap();
        let yes = [
            "https://mcp.example.com/mcp",
            "HTTPS://mcp.EXAMPLE.com/mcp",
            "https://mcp.example.com:443/mcp",
            "https://mcp.example.com/mcp?session=1",
            "https://mcp.example.com/mcp#top",
        ];
        for htu in yes {
            assert!(origin.matches(htu, "/mcp"), "{htu}");
        }
        let no = [
            "https://mcp.example.com/mcp/",
            "https://mcp.example.com/MCP",
            "http://mcp.example.com/mcp",
            "https://mcp.example.com:8443/mcp",
            "https://other.example.com/mcp",
            "https://user@mcp.example.com/mcp",
            "/mcp",
            "mcp.example.com/mcp",
            "",
        ];
        for htu in no {
            assert!(!origin.matches(htu, "/mcp"), "{htu}");
        }
        assert!(origin.matches("https://mcp.example.com", ""));
        assert!(origin.matches("https://mcp.example.com/", "/"));
    }

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        let ok = Origin::parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(ok, Origin("http://127.0.0.1:8080".to_owned()));
        for bad in [
            "https://mcp.example.com/mcp",
            "https://mcp.example.com?x",
            "https://mcp.example.com#x",
            "ftp://mcp.example.com",
            "mcp.example.com",
            "https://u@mcp.example.com",
        ] {
            assert_eq!(
                Origin::parse(bad),
                Err(ConfigError::InvalidPublicOrigin),
                "{bad}"
            );
        }
    }
}
