//! The signature a forwarded request carries from the node a client reached to the holder of
//! its session (N9): HMAC-SHA256, under the key the nodes share, over what decides what the
//! holder does with the request.
//!
//! The `mcp-forward` header is space-separated: the format's version (`1`), the holder's name
//! (base64url), its incarnation, the session's generation, the deadline (Unix milliseconds),
//! the forward's id, the owner's key (base64url, or `-`) and the signature (base64url). The
//! signature covers those fields, the method, the session id, the `Last-Event-ID` and
//! `Mcp-Forward-After` headers, and a SHA-256 of the body: a request whose signature does not
//! match is refused, and one past its deadline is dropped before anything is delivered.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use sha2::{Digest, Sha256};

use crate::core::cluster::Fence;
use crate::protocol::{LAST_EVENT_ID, MCP_SESSION_ID};

/// The header of a forwarded request: who it is for, until when, and its signature.
pub(crate) const MCP_FORWARD: HeaderName = HeaderName::from_static("mcp-forward");

/// The header of a forward sent again: the last event of its stream the asking node has, so
/// that the holder gives the rest.
pub(crate) const MCP_FORWARD_AFTER: HeaderName = HeaderName::from_static("mcp-forward-after");

/// The format's version, the first field of [`MCP_FORWARD`].
const VERSION: &str = "1";

type HmacSha256 = Hmac<Sha256>;

/// A new forward id: a random prefix drawn once per process, then a count, in 32 hexadecimal
/// digits. Unique among this process's forwards by the count, and among processes by the
/// prefix; a forward id is signed, not secret, so it need not be unpredictable, and drawing
/// 122 random bits per forwarded request (a `getrandom` system call each) bought nothing.
pub(crate) fn forward_id() -> String {
    static PREFIX: LazyLock<u64> = LazyLock::new(|| uuid::Uuid::new_v4().as_u64_pair().0);
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    // Not `format!("{:016x}{:016x}")`: every POST of a node makes one, and `fmt`'s padded hex
    // cost about 2,000 instructions, several times this loop's.
    let mut id = String::with_capacity(32);
    for word in [*PREFIX, count] {
        for shift in (0..16).rev() {
            id.push(char::from(
                b"0123456789abcdef"[(word >> (shift * 4)) as usize & 0xf],
            ));
        }
    }
    id
}

/// What a forward says about itself, signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Forward {
    /// The holder it is for.
    pub(crate) node: String,
    /// The holder's holding of the session, as the asking node knows it.
    pub(crate) fence: Fence,
    /// Past this (Unix milliseconds), the holder delivers nothing of it.
    pub(crate) deadline_ms: u64,
    /// Unique per request of a client: a forward sent again keeps it (N9).
    pub(crate) id: String,
    /// The key of the request's owner (S7, A4), which the holder checks the session against.
    pub(crate) owner: Option<String>,
}

/// Why a forwarded request was refused before anything was done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No `mcp-forward` header, or one this format does not read.
    Malformed,
    /// The signature does not match.
    Forged,
    /// Past its deadline.
    Expired,
}

impl Forward {
    /// The forward, due within `within` from now.
    pub(crate) fn due_within(mut self, within: Duration) -> Self {
        self.deadline_ms = unix_ms(SystemTime::now() + within);
        self
    }

    /// Signs the request about to be sent: its `mcp-forward` header, over `body`.
    pub(crate) fn sign(
        &self,
        secret: &[u8],
        method: &Method,
        headers: &mut HeaderMap,
        body: &[u8],
    ) {
        let mut value = self.fields();
        let signature = mac(secret, method, headers, body, &value).finalize();
        value.push(' ');
        URL_SAFE_NO_PAD.encode_string(signature.into_bytes(), &mut value);
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(MCP_FORWARD, value);
        }
    }

    /// The forward a received request carries, once its signature and deadline are checked.
    pub(crate) fn verify(
        secret: &[u8],
        method: &Method,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Forward, Refused> {
        let value = headers
            .get(MCP_FORWARD)
            .and_then(|v| v.to_str().ok())
            .ok_or(Refused::Malformed)?;
        let (fields, signature) = value.rsplit_once(' ').ok_or(Refused::Malformed)?;
        let forward = Forward::parse(fields).ok_or(Refused::Malformed)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| Refused::Malformed)?;
        mac(secret, method, headers, body, fields)
            .verify_slice(&signature)
            .map_err(|_| Refused::Forged)?;
        if unix_ms(SystemTime::now()) > forward.deadline_ms {
            return Err(Refused::Expired);
        }
        Ok(forward)
    }

    /// `<version> <node> <incarnation> <generation> <deadline> <id> <owner>`, the node and the
    /// owner in base64 (`-`: none). Written piece by piece, not with `format!`: every forward
    /// writes one, and `format!` cost about 2,000 instructions more.
    fn fields(&self) -> String {
        // Room for the signature the header adds after them, too.
        let mut fields = String::with_capacity(160 + self.node.len() * 2);
        fields.push_str(VERSION);
        fields.push(' ');
        URL_SAFE_NO_PAD.encode_string(&self.node, &mut fields);
        for number in [
            self.fence.incarnation,
            self.fence.generation,
            self.deadline_ms,
        ] {
            fields.push(' ');
            fields.push_str(itoa::Buffer::new().format(number));
        }
        fields.push(' ');
        fields.push_str(&self.id);
        fields.push(' ');
        match &self.owner {
            Some(owner) => URL_SAFE_NO_PAD.encode_string(owner, &mut fields),
            None => fields.push('-'),
        }
        fields
    }

    fn parse(fields: &str) -> Option<Forward> {
        let mut fields = fields.split(' ');
        if fields.next()? != VERSION {
            return None;
        }
        let text = |field: &str| {
            let bytes = URL_SAFE_NO_PAD.decode(field).ok()?;
            String::from_utf8(bytes).ok()
        };
        let node = text(fields.next()?)?;
        let incarnation = fields.next()?.parse().ok()?;
        let generation = fields.next()?.parse().ok()?;
        let deadline_ms = fields.next()?.parse().ok()?;
        let id = fields.next()?.to_owned();
        let owner = match fields.next()? {
            "-" => None,
            owner => Some(text(owner)?),
        };
        if fields.next().is_some() || id.is_empty() || id.len() > 64 {
            return None;
        }
        Some(Forward {
            node,
            fence: Fence::new(incarnation, generation),
            deadline_ms,
            id,
            owner,
        })
    }
}

/// The MAC of a forward: its fields, and what of the request decides what the holder does.
fn mac(
    secret: &[u8],
    method: &Method,
    headers: &HeaderMap,
    body: &[u8],
    fields: &str,
) -> HmacSha256 {
    let header = |name: &HeaderName| headers.get(name).map_or(&b""[..], HeaderValue::as_bytes);
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes a key of any length");
    for part in [
        b"mcp-forward".as_slice(),
        fields.as_bytes(),
        method.as_str().as_bytes(),
        header(&MCP_SESSION_ID),
        header(&LAST_EVENT_ID),
        header(&MCP_FORWARD_AFTER),
        &Sha256::digest(body),
    ] {
        // Each part with its length first: no two requests sign the same bytes.
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac
}

fn unix_ms(at: SystemTime) -> u64 {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Forward {
        fn new(node: &str, fence: Fence, within: Duration, owner: Option<String>) -> Self {
            Forward {
                node: node.to_owned(),
                fence,
                deadline_ms: 0,
                id: uuid::Uuid::new_v4().simple().to_string(),
                owner,
            }
            .due_within(within)
        }
    }

    fn signed(forward: &Forward, body: &[u8]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(MCP_SESSION_ID, HeaderValue::from_static("s1"));
        forward.sign(b"secret", &Method::POST, &mut headers, body);
        headers
    }

    #[test]
    fn forward_ids_are_distinct_and_key_safe() {
        let ids: Vec<String> = (0..1000).map(|_| forward_id()).collect();
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        assert!(ids.iter().all(|id| {
            id.len() == 32
                && id
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        }));
        // One process, one prefix; then the count, in order (other tests may take some).
        assert!(ids.iter().all(|id| id[..16] == ids[0][..16]));
        let counts: Vec<u64> = ids
            .iter()
            .map(|id| u64::from_str_radix(&id[16..], 16).unwrap())
            .collect();
        assert!(counts.windows(2).all(|w| w[0] < w[1]), "{counts:?}");
    }

    #[test]
    fn a_signed_forward_verifies_and_says_what_it_was_given() {
        let forward = Forward::new(
            "node a",
            Fence::new(7, 3),
            Duration::from_secs(5),
            Some("iss sub".into()),
        );
        let headers = signed(&forward, b"{}");
        let read = Forward::verify(b"secret", &Method::POST, &headers, b"{}").unwrap();
        assert_eq!(read, forward);
        let anonymous = Forward::new("a", Fence::new(1, 0), Duration::from_secs(5), None);
        let headers = signed(&anonymous, b"");
        let read = Forward::verify(b"secret", &Method::POST, &headers, b"").unwrap();
        assert_eq!(read.owner, None);
    }

    #[test]
    fn the_fields_are_written_as_nodes_of_other_builds_read_them() {
        // Nodes of two builds run side by side in a rolling upgrade: the text is the format's.
        let mut forward = Forward::new("node a", Fence::new(7, 3), Duration::ZERO, None);
        forward.deadline_ms = 1_700_000_000_123;
        forward.id = "0123abcd".into();
        assert_eq!(forward.fields(), "1 bm9kZSBh 7 3 1700000000123 0123abcd -");
        forward.owner = Some("iss sub".into());
        assert_eq!(
            forward.fields(),
            "1 bm9kZSBh 7 3 1700000000123 0123abcd aXNzIHN1Yg"
        );
        let headers = signed(&forward, b"");
        let value = headers[MCP_FORWARD].to_str().unwrap();
        let (fields, signature) = value.rsplit_once(' ').unwrap();
        assert_eq!(fields, forward.fields());
        assert_eq!(URL_SAFE_NO_PAD.decode(signature).unwrap().len(), 32);
    }

    #[test]
    fn anything_changed_breaks_the_signature() {
        let forward = Forward::new("a", Fence::new(7, 3), Duration::from_secs(5), None);
        let headers = signed(&forward, b"{}");
        let forged = Err(Refused::Forged);
        assert_eq!(
            Forward::verify(b"other", &Method::POST, &headers, b"{}"),
            forged
        );
        assert_eq!(
            Forward::verify(b"secret", &Method::GET, &headers, b"{}"),
            forged
        );
        assert_eq!(
            Forward::verify(b"secret", &Method::POST, &headers, b"{ }"),
            forged
        );
        let mut moved = headers.clone();
        moved.insert(MCP_SESSION_ID, HeaderValue::from_static("s2"));
        assert_eq!(
            Forward::verify(b"secret", &Method::POST, &moved, b"{}"),
            forged
        );
        let mut resumed = headers.clone();
        resumed.insert(MCP_FORWARD_AFTER, HeaderValue::from_static("1 4"));
        assert_eq!(
            Forward::verify(b"secret", &Method::POST, &resumed, b"{}"),
            forged
        );
        // Another generation, signed with the first's signature.
        let value = headers[MCP_FORWARD]
            .to_str()
            .unwrap()
            .replacen(" 3 ", " 4 ", 1);
        let mut bumped = headers.clone();
        bumped.insert(MCP_FORWARD, HeaderValue::from_str(&value).unwrap());
        assert_eq!(
            Forward::verify(b"secret", &Method::POST, &bumped, b"{}"),
            forged
        );
    }

    #[test]
    fn late_and_malformed_forwards_are_refused() {
        let mut late = Forward::new("a", Fence::new(1, 0), Duration::ZERO, None);
        late.deadline_ms -= 1;
        let headers = signed(&late, b"");
        assert_eq!(
            Forward::verify(b"secret", &Method::POST, &headers, b""),
            Err(Refused::Expired)
        );
        let malformed = Err(Refused::Malformed);
        assert_eq!(
            Forward::verify(b"secret", &Method::POST, &HeaderMap::new(), b""),
            malformed
        );
        for value in [
            "",
            "1",
            "2 YQ 1 0 9 id - sig",
            "1 YQ x 0 9 id - sig",
            "1 YQ 1 0 9 id - !!",
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(MCP_FORWARD, HeaderValue::from_static(value));
            assert_eq!(
                Forward::verify(b"secret", &Method::POST, &headers, b""),
                malformed,
                "{value:?}"
            );
        }
    }
}
