//! M9: `requestState` sealed by the server, so that the retry of an input-required request is
//! verified wherever it lands.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// What every sealed state starts with: the format's version.
const FORMAT: &str = "s1";

/// The fewest bytes a key may have: 256 bits, the strength of the MAC.
pub const MIN_STATE_KEY_BYTES: usize = 32;

/// How long a sealed state is accepted by default: ten minutes, longer than a person takes to
/// answer an elicitation, shorter than a leaked state is worth keeping.
pub const DEFAULT_STATE_LIFETIME: Duration = Duration::from_secs(600);

/// Seals and opens the `requestState` of 2026-07-28's input-required results (SEP-2322) with
/// HMAC-SHA-256, so that the client's retry is accepted by any node that has the keys, and a
/// forged, altered, truncated, expired or foreign state is refused.
///
/// The client holds the state and sends it back as it is; it is opaque to the client but not
/// secret: the payload travels in base64, readable by whoever holds the state. Keep secrets
/// out of it, or encrypt them yourself. Applications that run several nodes (or restart) need
/// one: state kept in one process's memory is not there when the retry lands elsewhere.
///
/// Keys rotate: one key seals, every key given opens, each named by an id that the state
/// carries. Add the new key as the sealing one, keep the old one to open states sealed
/// before, and drop it once [`lifetime`](StateSealer::lifetime) has passed.
///
/// A state is sealed for a context (the method and tool name, say, or the principal): opened
/// under another context it is refused, so that a state given for one call cannot be replayed
/// into another.
///
/// ```
/// use mcp_streamable_server::StateSealer;
///
/// let sealer = StateSealer::new("k2", &[7; 32]).unwrap().also_open("k1", &[3; 32]).unwrap();
/// let state = sealer.seal("tools/call book_flight", b"{\"step\":2}");
/// assert_eq!(sealer.open("tools/call book_flight", &state).unwrap(), b"{\"step\":2}");
/// assert!(sealer.open("tools/call cancel_flight", &state).is_err());
/// ```
#[derive(Clone)]
pub struct StateSealer {
    /// The sealing key first, then the others.
    keys: Vec<(String, HmacSha256)>,
    lifetime: Duration,
}

impl fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("StateSealer")
            .field("keys", &ids)
            .field("lifetime", &self.lifetime)
            .finish()
    }
}

/// Why a key cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateKeyError {
    /// Shorter than [`MIN_STATE_KEY_BYTES`].
    TooShort(usize),
    /// The id is empty, or has a character outside letters, digits, `-` and `_`.
    BadId(String),
    /// Two keys with one id.
    DuplicateId(String),
}

impl fmt::Display for StateKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateKeyError::TooShort(len) => write!(
                f,
                "a state key of {len} bytes; at least {MIN_STATE_KEY_BYTES} are needed"
            ),
            StateKeyError::BadId(id) => write!(
                f,
                "state key id {id:?}: use letters, digits, '-' and '_', at least one"
            ),
            StateKeyError::DuplicateId(id) => write!(f, "state key id {id:?} is given twice"),
        }
    }
}

impl std::error::Error for StateKeyError {}

/// Why a state was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// Not a sealed state of this format: cut, or never one.
    Malformed,
    /// Sealed with a key this sealer does not have (dropped, or another deployment's).
    UnknownKey,
    /// Its seal does not hold: altered, forged, or sealed for another context.
    Forged,
    /// Past its lifetime.
    Expired,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StateError::Malformed => "requestState is not a state this server sealed",
            StateError::UnknownKey => {
                "requestState was sealed with a key this server does not have"
            }
            StateError::Forged => "requestState was altered, or given for another request",
            StateError::Expired => "requestState has expired: start the request again",
        })
    }
}

impl std::error::Error for StateError {}

impl StateSealer {
    /// A sealer that seals with `secret`, named `id`.
    pub fn new(id: &str, secret: &[u8]) -> Result<StateSealer, StateKeyError> {
        Ok(StateSealer {
            keys: vec![key(id, secret)?],
            lifetime: DEFAULT_STATE_LIFETIME,
        })
    }

    /// Also opens states sealed with `secret`, named `id`: a key being retired.
    pub fn also_open(mut self, id: &str, secret: &[u8]) -> Result<StateSealer, StateKeyError> {
        if self.keys.iter().any(|(known, _)| known == id) {
            return Err(StateKeyError::DuplicateId(id.to_owned()));
        }
        self.keys.push(key(id, secret)?);
        Ok(self)
    }

    /// How long a sealed state is accepted. Default: [`DEFAULT_STATE_LIFETIME`].
    pub fn lifetime(mut self, lifetime: Duration) -> StateSealer {
        self.lifetime = lifetime;
        self
    }

    /// `payload`, sealed for `context` with the sealing key, valid for the lifetime from now.
    pub fn seal(&self, context: &str, payload: &[u8]) -> String {
        self.seal_at(context, payload, SystemTime::now())
    }

    /// [`seal`](StateSealer::seal) as if the time were `now`.
    pub fn seal_at(&self, context: &str, payload: &[u8], now: SystemTime) -> String {
        let (id, mac) = &self.keys[0];
        let expiry = seconds(now).saturating_add(self.lifetime.as_secs());
        let body = format!("{FORMAT}.{id}.{expiry}.{}", B64.encode(payload));
        let tag = tag(mac, context, &body).finalize().into_bytes();
        format!("{body}.{}", B64.encode(tag))
    }

    /// The payload of `state` sealed for `context`, if its seal holds and it has not expired.
    pub fn open(&self, context: &str, state: &str) -> Result<Vec<u8>, StateError> {
        self.open_at(context, state, SystemTime::now())
    }

    /// [`open`](StateSealer::open) as if the time were `now`.
    pub fn open_at(
        &self,
        context: &str,
        state: &str,
        now: SystemTime,
    ) -> Result<Vec<u8>, StateError> {
        let (body, sealed) = state.rsplit_once('.').ok_or(StateError::Malformed)?;
        let mut fields = body.split('.');
        let (Some(FORMAT), Some(id), Some(expiry), Some(payload), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(StateError::Malformed);
        };
        let sealed = B64.decode(sealed).map_err(|_| StateError::Malformed)?;
        let (_, mac) = self
            .keys
            .iter()
            .find(|(known, _)| known == id)
            .ok_or(StateError::UnknownKey)?;
        tag(mac, context, body)
            .verify_slice(&sealed)
            .map_err(|_| StateError::Forged)?;
        // Sealed here, so well formed; checked all the same.
        let expiry: u64 = expiry.parse().map_err(|_| StateError::Malformed)?;
        if seconds(now) >= expiry {
            return Err(StateError::Expired);
        }
        B64.decode(payload).map_err(|_| StateError::Malformed)
    }
}

fn key(id: &str, secret: &[u8]) -> Result<(String, HmacSha256), StateKeyError> {
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    if id.is_empty() || !id.bytes().all(valid) {
        return Err(StateKeyError::BadId(id.to_owned()));
    }
    if secret.len() < MIN_STATE_KEY_BYTES {
        return Err(StateKeyError::TooShort(secret.len()));
    }
    let mac = HmacSha256::new_from_slice(secret).map_err(|_| StateKeyError::TooShort(0))?;
    Ok((id.to_owned(), mac))
}

/// The MAC over the context (length-prefixed, so that no context runs into the body) and the
/// body.
fn tag(mac: &HmacSha256, context: &str, body: &str) -> HmacSha256 {
    let mut mac = mac.clone();
    mac.update(&(context.len() as u64).to_be_bytes());
    mac.update(context.as_bytes());
    mac.update(body.as_bytes());
    mac
}

fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
