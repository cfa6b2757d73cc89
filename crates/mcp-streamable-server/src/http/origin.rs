//! DNS-rebinding protection: `Origin` and `Host` checks (S17).

use http::HeaderMap;
use http::header::{HOST, ORIGIN};

use crate::core::config::AllowList;
use crate::http::error::{Kind, Reject};

/// Refuses a request whose `Host`, or whose `Origin` when present, is not allowed.
pub(crate) fn check(
    hosts: &AllowList,
    origins: &AllowList,
    headers: &HeaderMap,
    uri_host: Option<&str>,
) -> Result<(), Reject> {
    if let Some(origin) = headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin_allowed(origins, origin) {
            return Err(Reject::new(
                Kind::Forbidden,
                format!("origin {origin:?} is not allowed"),
            ));
        }
    }
    if !matches!(hosts, AllowList::Any) {
        // HTTP/2 carries the host in the URI's authority instead of a Host header.
        let host = headers.get(HOST).and_then(|h| h.to_str().ok()).or(uri_host);
        let Some(host) = host else {
            return Err(Reject::new(Kind::Forbidden, "missing Host header"));
        };
        if !host_allowed(hosts, host) {
            return Err(Reject::new(
                Kind::Forbidden,
                format!("host {host:?} is not allowed"),
            ));
        }
    }
    Ok(())
}

/// The name part of an authority: `host` of `host:port`, `v6` of `[v6]:port`.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().map_or(authority, |v6| v6);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(name, _)| name)
}

fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name == "::1"
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn host_allowed(hosts: &AllowList, host: &str) -> bool {
    match hosts {
        AllowList::Any => true,
        AllowList::Loopback => is_loopback_name(host_name(host)),
        AllowList::List(list) => list.iter().any(|allowed| {
            let name = host_name(allowed);
            let brackets = if allowed.starts_with('[') { 2 } else { 0 };
            if allowed.len() > name.len() + brackets {
                // The entry names a port: the whole authority must match.
                allowed.eq_ignore_ascii_case(host)
            } else {
                name.eq_ignore_ascii_case(host_name(host))
            }
        }),
    }
}

fn origin_allowed(origins: &AllowList, origin: &str) -> bool {
    match origins {
        AllowList::Any => true,
        AllowList::Loopback => {
            let Some((scheme, rest)) = origin.split_once("://") else {
                return false;
            };
            (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
                && !rest.contains('/')
                && is_loopback_name(host_name(rest))
        }
        AllowList::List(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s17_loopback_hosts() {
        for ok in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:3000",
            "127.1.2.3",
            "[::1]:80",
            "[::1]",
            "LOCALHOST",
        ] {
            assert!(host_allowed(&AllowList::Loopback, ok), "{ok}");
        }
        for bad in [
            "evil.com",
            "evil.com:80",
            "localhost.evil.com",
            "127.0.0.1.evil.com",
            "[::2]:80",
            "10.0.0.1",
            "",
        ] {
            assert!(!host_allowed(&AllowList::Loopback, bad), "{bad}");
        }
    }

    #[test]
    fn s17_listed_hosts_match_with_or_without_port() {
        let list = AllowList::List(vec!["example.com".into(), "api.test:8443".into()]);
        assert!(host_allowed(&list, "example.com"));
        assert!(host_allowed(&list, "EXAMPLE.com:443"));
        assert!(host_allowed(&list, "api.test:8443"));
        assert!(!host_allowed(&list, "api.test:9000"));
        assert!(!host_allowed(&list, "evil.com"));
    }

    #[test]
    fn s17_loopback_origins() {
        for ok in [
            "http://localhost:3000",
            "https://127.0.0.1",
            "http://[::1]:8080",
        ] {
            assert!(origin_allowed(&AllowList::Loopback, ok), "{ok}");
        }
        for bad in [
            "http://evil.com",
            "null",
            "file://",
            "http://localhost.evil.com",
            "http://localhost:3000/x",
        ] {
            assert!(!origin_allowed(&AllowList::Loopback, bad), "{bad}");
        }
    }
}
