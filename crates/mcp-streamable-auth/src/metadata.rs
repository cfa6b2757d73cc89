//! OAuth 2.0 Protected Resource Metadata (RFC 9728): the document, its well-known URLs and the
//! answers to requests for them.

use std::{
    convert::Infallible,
    future::{Ready, ready},
    task::{Context, Poll},
};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri, header};
use http_body_util::Full;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// The well-known path of the metadata (RFC 9728 §3), before the resource's own path.
pub const WELL_KNOWN_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// The document a client fetches to learn which authorization servers issue tokens for this
/// resource and which scopes to ask for (RFC 9728 §2).
///
/// `resource` is the resource URL exactly as configured: it is never parsed and printed back,
/// so `https://mcp.example.com` does not become `https://mcp.example.com/` nor the reverse (a
/// client sends it as the `resource` parameter, and authorization servers such as Entra compare
/// it exactly).
///
/// ```
/// use mcp_streamable_auth::ResourceMetadata;
///
/// let document: ResourceMetadata = serde_json::from_str(
///     r#"{"resource":"https://mcp.example.com","authorization_servers":["https://as.example.com"]}"#,
/// )?;
/// assert_eq!(document.resource, "https://mcp.example.com");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// The resource identifier: the MCP endpoint's URL as clients use it.
    pub resource: String,
    /// The issuer URLs of the authorization servers that issue tokens for this resource.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes a client may ask for; left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// How the token may be sent: `["header"]`, the only method MCP allows.
    #[serde(default)]
    pub bearer_methods_supported: Vec<String>,
    /// A name for people, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// A URL of documentation for developers, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
}

/// The pieces of a checked resource URL.
#[derive(Debug)]
pub(crate) struct ResourceUrl<'a> {
    /// `scheme://authority`, as written.
    pub(crate) origin: &'a str,
    /// The path as written: empty, `/` or `/...`.
    pub(crate) path: &'a str,
}

/// Checks that `url` can identify a resource (RFC 8707 §2: absolute, no fragment; and here no
/// query, no user info, `http` or `https`) and splits it, without normalizing anything.
pub(crate) fn parse_resource(url: &str) -> Result<ResourceUrl<'_>, ConfigError> {
    if url.contains('#') {
        return Err(ConfigError::ResourceHasFragment);
    }
    if url.contains('?') {
        return Err(ConfigError::ResourceHasQuery);
    }
    let (origin, path) = split_http_url(url).ok_or(ConfigError::ResourceNotAbsolute)?;
    Ok(ResourceUrl { origin, path })
}

/// Splits an absolute `http` or `https` URL with a host and no user info into its origin and
/// the rest, or `None`.
pub(crate) fn split_http_url(url: &str) -> Option<(&str, &str)> {
    let uri: Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?;
    if !(scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http")) {
        return None;
    }
    let authority = uri.authority()?;
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return None;
    }
    let after_scheme = url.find("://")? + 3;
    let path_start = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |i| after_scheme + i);
    Some((&url[..path_start], &url[path_start..]))
}

/// The path-aware well-known path of a resource with `path` (RFC 9728 §3.1): the prefix, then
/// the path, where a lone `/` after the host counts as no path.
pub(crate) fn well_known_path(path: &str) -> String {
    let suffix = if path == "/" { "" } else { path };
    format!("{WELL_KNOWN_PREFIX}{suffix}")
}

/// The answer to a request for the metadata document: 200 with the JSON to GET, the same
/// headers without a body to HEAD, a CORS preflight answer to OPTIONS, 405 to anything else.
/// Every answer allows any origin: the document is public, and browser-based clients read it.
pub(crate) fn answer(document: &Bytes, method: &Method) -> Response<Full<Bytes>> {
    let (status, body) = match *method {
        Method::GET => (StatusCode::OK, document.clone()),
        Method::HEAD => (StatusCode::OK, Bytes::new()),
        Method::OPTIONS => (StatusCode::NO_CONTENT, Bytes::new()),
        _ => (StatusCode::METHOD_NOT_ALLOWED, Bytes::new()),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    match status {
        StatusCode::OK => {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(document.len()));
        }
        StatusCode::NO_CONTENT => {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static(ALLOWED_METHODS),
            );
            // Clients send `MCP-Protocol-Version` with discovery requests, which makes browsers
            // ask first.
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("*"),
            );
            headers.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("86400"),
            );
        }
        _ => {
            headers.insert(header::ALLOW, HeaderValue::from_static(ALLOWED_METHODS));
        }
    }
    response
}

const ALLOWED_METHODS: &str = "GET, HEAD, OPTIONS";

/// A tower service that answers every request with the [`Guard`](crate::Guard)'s metadata document (GET, HEAD,
/// OPTIONS; 405 otherwise), whatever the path: the router in front of it chooses the paths,
/// [`Guard::metadata_paths`](crate::Guard::metadata_paths).
///
/// ```
/// use axum::{Router, routing::post};
/// # use mcp_streamable_auth::{Guard, Principal, VerifyFuture};
/// # struct V;
/// # impl mcp_streamable_auth::TokenVerifier for V {
/// #     fn verify<'a>(&'a self, _: &'a str) -> VerifyFuture<'a> { Box::pin(async { Ok(Principal::new("a")) }) }
/// # }
///
/// let guard = Guard::builder("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .build(V)?;
/// let mut app = Router::new()
///     .route("/mcp", post(|| async { "ok" }))
///     .route_layer(guard.layer());
/// for path in guard.metadata_paths() {
///     app = app.route_service(path, guard.metadata_service());
/// }
/// # let _: Router = app;
/// # Ok::<(), mcp_streamable_auth::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct MetadataService {
    document: Bytes,
}

impl MetadataService {
    pub(crate) fn new(document: Bytes) -> MetadataService {
        MetadataService { document }
    }
}

impl<B> tower_service::Service<Request<B>> for MetadataService {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        ready(Ok(answer(&self.document, request.method())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_split_as_written() {
        let rows = [
            ("https://mcp.example.com", "https://mcp.example.com", ""),
            ("https://mcp.example.com/", "https://mcp.example.com", "/"),
            (
                "https://mcp.example.com/mcp",
                "https://mcp.example.com",
                "/mcp",
            ),
            (
                "https://mcp.example.com/mcp/",
                "https://mcp.example.com",
                "/mcp/",
            ),
            ("http://127.0.0.1:8080/a/b", "http://127.0.0.1:8080", "/a/b"),
        ];
        for (url, origin, path) in rows {
            let parsed = parse_resource(url).unwrap();
            assert_eq!((parsed.origin, parsed.path), (origin, path), "{url}");
        }
    }

    #[test]
    fn resources_refused() {
        let rows = [
            ("mcp.example.com/mcp", ConfigError::ResourceNotAbsolute),
            ("/mcp", ConfigError::ResourceNotAbsolute),
            (
                "ftp://mcp.example.com/mcp",
                ConfigError::ResourceNotAbsolute,
            ),
            (
                "https://user@mcp.example.com/mcp",
                ConfigError::ResourceNotAbsolute,
            ),
            (
                "https://mcp.example.com/mcp#x",
                ConfigError::ResourceHasFragment,
            ),
            (
                "https://mcp.example.com/mcp?x=1",
                ConfigError::ResourceHasQuery,
            ),
            ("", ConfigError::ResourceNotAbsolute),
        ];
        for (url, error) in rows {
            assert_eq!(parse_resource(url).unwrap_err(), error, "{url}");
        }
    }

    #[test]
    fn well_known_paths_insert_the_prefix_before_the_path() {
        assert_eq!(well_known_path(""), WELL_KNOWN_PREFIX);
        assert_eq!(well_known_path("/"), WELL_KNOWN_PREFIX);
        assert_eq!(
            well_known_path("/mcp"),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            well_known_path("/mcp/"),
            "/.well-known/oauth-protected-resource/mcp/"
        );
    }

    #[test]
    fn answers_by_method() {
        let document = Bytes::from_static(b"{}");
        let get = answer(&document, &Method::GET);
        assert_eq!(get.status(), 200);
        assert_eq!(get.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(get.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert_eq!(get.headers()[header::CONTENT_LENGTH], "2");
        let head = answer(&document, &Method::HEAD);
        assert_eq!(head.status(), 200);
        assert_eq!(head.headers()[header::CONTENT_LENGTH], "2");
        let options = answer(&document, &Method::OPTIONS);
        assert_eq!(options.status(), 204);
        assert_eq!(
            options.headers()[header::ACCESS_CONTROL_ALLOW_METHODS],
            "GET, HEAD, OPTIONS"
        );
        assert_eq!(options.headers()[header::ACCESS_CONTROL_ALLOW_HEADERS], "*");
        for method in [Method::POST, Method::DELETE, Method::PUT] {
            let refused = answer(&document, &method);
            assert_eq!(refused.status(), 405, "{method}");
            assert_eq!(refused.headers()[header::ALLOW], "GET, HEAD, OPTIONS");
            assert_eq!(refused.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        }
    }

    #[test]
    fn the_document_reads_back() {
        let document = ResourceMetadata {
            resource: "https://mcp.example.com".into(),
            authorization_servers: vec!["https://as.example.com".into()],
            scopes_supported: vec![],
            bearer_methods_supported: vec!["header".into()],
            resource_name: None,
            resource_documentation: None,
        };
        let json = serde_json::to_string(&document).unwrap();
        assert_eq!(
            json,
            r#"{"resource":"https://mcp.example.com","authorization_servers":["https://as.example.com"],"bearer_methods_supported":["header"]}"#
        );
        let back: ResourceMetadata = serde_json::from_str(&json).unwrap();
        assert_eq!(back, document);
    }
}
