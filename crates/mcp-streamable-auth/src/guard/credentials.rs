//! The credentials of a request's `Authorization` header: its scheme and its token.

use http::{HeaderMap, header};

use crate::{challenge::Scheme, error::RefusalKind};

/// Credentials longer than this are refused as malformed before reaching the verifier. Real
/// access tokens, JWTs with many claims included, stay well under it; the bound keeps a client
/// from making the verifier decode megabytes.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The schemes a guard takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepted {
    pub(crate) bearer: bool,
    pub(crate) dpop: bool,
}

/// The scheme and token of the request's one `Authorization` header, or why there are none, with
/// the scheme the refusal speaks of. A scheme the guard does not take (`Basic`, or `Bearer` when
/// DPoP is required) counts as no credentials: the client does not know what this server wants
/// yet, and the challenge tells it.
pub(crate) fn credentials(
    headers: &HeaderMap,
    accepted: Accepted,
) -> Result<(Scheme, &str), (Scheme, RefusalKind)> {
    let missing = (Scheme::Bearer, RefusalKind::MissingToken);
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next().ok_or(missing)?;
    let bytes = value.as_bytes();
    let (name, rest) = match bytes.iter().position(|&b| b == b' ') {
        Some(space) => (&bytes[..space], &bytes[space..]),
        None => (bytes, &b""[..]),
    };
    let scheme = if name.eq_ignore_ascii_case(b"bearer") && accepted.bearer {
        Some(Scheme::Bearer)
    } else if name.eq_ignore_ascii_case(b"dpop") && accepted.dpop {
        Some(Scheme::Dpop)
    } else {
        None
    };
    if values.next().is_some() {
        let scheme = scheme.unwrap_or(Scheme::Bearer);
        return Err((scheme, RefusalKind::MalformedToken));
    }
    let scheme = scheme.ok_or(missing)?;
    let malformed = (scheme, RefusalKind::MalformedToken);
    let token = rest.trim_ascii();
    if token.is_empty() || token.len() > MAX_TOKEN_BYTES || !is_b64token(token) {
        return Err(malformed);
    }
    let token = std::str::from_utf8(token).map_err(|_| malformed)?;
    Ok((scheme, token))
}

/// RFC 6750 §2.1 (and RFC 9449 §7.1, the same `token68`):
/// `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_b64token(token: &[u8]) -> bool {
    let end = token.iter().rposition(|&b| b != b'=').map_or(0, |i| i + 1);
    end > 0
        && token[..end]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}
