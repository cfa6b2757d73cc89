//! Finding the authorization server from a 401: the protected resource metadata (from the
//! challenge's `resource_metadata`, then the path-aware well-known URL, then the root one),
//! then the authorization server's metadata at the well-known URLs in the order of the MCP
//! spec (2025-11-25), with the 2025-03-26 fallbacks when the resource has no metadata.

use url::Url;

use crate::challenge::Challenge;
use crate::error::{Error, ErrorKind};
use crate::http::{Http, check_secure};
use crate::metadata::{ResourceMetadata, ServerMetadata};

/// What discovery found for a resource.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` parameter: as the metadata publishes it, else the server's URL.
    pub(crate) resource: String,
    /// The resource's scopes, if its metadata lists them.
    pub(crate) resource_scopes: Option<Vec<String>>,
    pub(crate) server: ServerMetadata,
}

/// The well-known URLs of a resource's metadata: path-aware first, then the root (RFC 9728,
/// section 3.1; MCP 2025-11-25, "Protected Resource Metadata Discovery Requirements").
pub(crate) fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    let mut urls = Vec::new();
    let path = server.path().trim_end_matches('/');
    let mut root = server.clone();
    root.set_query(None);
    root.set_fragment(None);
    if !path.is_empty() {
        let mut aware = root.clone();
        aware.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
        urls.push(aware);
    }
    root.set_path("/.well-known/oauth-protected-resource");
    urls.push(root);
    urls
}

/// The well-known URLs of an authorization server's metadata, in the MCP spec's order: with a
/// path, OAuth path-inserted, OpenID path-inserted, OpenID path-appended; without, OAuth then
/// OpenID (RFC 8414, section 3.1; OpenID Connect Discovery 1.0, section 4).
pub(crate) fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |p: String| {
        let mut url = issuer.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.set_path(&p);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Whether a resource identifier covers the server URL: same origin, and the server's path
/// within the resource's (RFC 9728, section 3.3, as the MCP SDKs apply it to path-less
/// resources published at the root).
pub(crate) fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != server.origin() || resource.fragment().is_some() {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server.path();
    path == prefix || path.starts_with(&format!("{prefix}/")) || prefix.is_empty()
}

/// The canonical URL of the MCP server (RFC 8707): no fragment, scheme and host in lower case
/// (as `url` writes them).
pub(crate) fn canonical(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    let text = url.to_string();
    // `url` writes a path-less URL with "/"; the spec's canonical form has none.
    match text.strip_suffix('/') {
        Some(stripped) if url.path() == "/" && url.query().is_none() => stripped.to_owned(),
        _ => text,
    }
}

/// Runs discovery for `server`, from the challenge of its 401 if there was one.
pub(crate) async fn discover(
    http: &Http,
    server: &Url,
    challenge: &Challenge,
) -> Result<Discovered, Error> {
    let resource = fetch_resource_metadata(http, server, challenge).await?;
    let Some(resource) = resource else {
        // 2025-03-26: no resource metadata; the server's origin is the authorization server,
        // with its metadata at the root or, failing that, the default endpoints.
        let issuer = server.origin().ascii_serialization();
        let issuer_url = Url::parse(&issuer).map_err(|e| Error::new(ErrorKind::Config).with(e))?;
        let metadata = fetch_server_metadata(http, &issuer, &issuer_url).await?;
        tracing::debug!(%issuer, found = metadata.is_some(), "no resource metadata: 2025-03-26 discovery");
        return Ok(Discovered {
            resource: canonical(server),
            resource_scopes: None,
            server: metadata.unwrap_or_else(|| ServerMetadata::fallback(&issuer)),
        });
    };
    if !resource_covers(&resource.resource, server) {
        return Err(Error::new(ErrorKind::ResourceMismatch).detail(resource.resource));
    }
    let issuer = resource
        .authorization_servers
        .first()
        .ok_or_else(|| Error::new(ErrorKind::Discovery).detail("no authorization_servers"))?;
    let issuer_url = Url::parse(issuer).map_err(|e| Error::new(ErrorKind::Discovery).with(e))?;
    check_secure(&issuer_url)?;
    let metadata = fetch_server_metadata(http, issuer, &issuer_url)
        .await?
        .ok_or_else(|| {
            Error::new(ErrorKind::Discovery).detail("no authorization server metadata")
        })?;
    Ok(Discovered {
        resource: resource.resource,
        resource_scopes: resource.scopes_supported,
        server: metadata,
    })
}

async fn fetch_resource_metadata(
    http: &Http,
    server: &Url,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>, Error> {
    // The challenge's URL first; the well-known ones if it is missing or does not answer.
    let mut urls = Vec::new();
    if let Some(url) = &challenge.resource_metadata {
        match Url::parse(url) {
            Ok(url) => urls.push(url),
            Err(e) => tracing::warn!(error = %e, "resource_metadata in the challenge is no URL"),
        }
    }
    urls.extend(resource_metadata_urls(server));
    urls.dedup();
    for url in urls {
        let answer = http.get(&url).await?;
        if answer.status.is_success() {
            tracing::debug!(%url, "protected resource metadata");
            return answer.json().map(Some);
        }
        tracing::debug!(%url, status = %answer.status, "no protected resource metadata here");
    }
    Ok(None)
}

/// The first metadata document found for `issuer`; its `issuer` must be the one asked for
/// (RFC 8414, section 3.3), compared as strings, without normalization.
async fn fetch_server_metadata(
    http: &Http,
    issuer: &str,
    issuer_url: &Url,
) -> Result<Option<ServerMetadata>, Error> {
    for url in server_metadata_urls(issuer_url) {
        let answer = http.get(&url).await?;
        if !answer.status.is_success() {
            tracing::debug!(%url, status = %answer.status, "no authorization server metadata here");
            continue;
        }
        let metadata: ServerMetadata = answer.json()?;
        if metadata.issuer != issuer {
            return Err(Error::new(ErrorKind::IssuerMismatch).detail(metadata.issuer));
        }
        return Ok(Some(metadata));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn resource_metadata_path_aware_first_then_root() {
        assert_eq!(
            strings(resource_metadata_urls(&url(
                "https://r.example/public/mcp?x=1"
            ))),
            [
                "https://r.example/.well-known/oauth-protected-resource/public/mcp",
                "https://r.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            strings(resource_metadata_urls(&url("https://r.example/"))),
            ["https://r.example/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_in_the_specs_order() {
        assert_eq!(
            strings(server_metadata_urls(&url("https://as.example/tenant1"))),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strings(server_metadata_urls(&url("https://as.example"))),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_resource_covers_its_paths_on_its_origin_only() {
        let server = url("http://localhost:3000/mcp");
        assert!(resource_covers("http://localhost:3000/mcp", &server));
        assert!(resource_covers("http://localhost:3000", &server));
        assert!(resource_covers("http://localhost:3000/", &server));
        assert!(!resource_covers("https://evil.example.com/mcp", &server));
        assert!(!resource_covers("http://localhost:3001/mcp", &server));
        assert!(!resource_covers("http://localhost:3000/mcp2", &server));
        assert!(!resource_covers("http://localhost:3000/other", &server));
        assert!(!resource_covers("not a url", &server));
    }

    #[test]
    fn the_canonical_url_has_no_fragment_and_no_lone_slash() {
        assert_eq!(
            canonical(&url("HTTPS://R.Example/mcp#x")),
            "https://r.example/mcp"
        );
        assert_eq!(canonical(&url("https://r.example/")), "https://r.example");
        assert_eq!(
            canonical(&url("https://r.example:8443/mcp/")),
            "https://r.example:8443/mcp/"
        );
    }
}
