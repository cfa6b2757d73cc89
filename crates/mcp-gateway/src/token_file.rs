//! `connect --oauth --token-file FILE`: the OAuth client's tokens and registrations kept in a
//! file the user names, so that the next run reaches the server without a new authorization.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use mcp_streamable_oauth::{BoxError, Registration, StoreFuture, TokenStore, Tokens};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

/// The file's permissions: it holds secrets (access and refresh tokens, client secrets), so
/// only its owner may read it.
const MODE: u32 = 0o600;

/// A [`TokenStore`] in a JSON file: tokens by resource, registrations by issuer.
///
/// Read once, when first needed (a missing file is an empty store); written whole on each
/// change, to a temporary file beside it (mode 0600) renamed over it, so that a crash never
/// leaves half a file and other users never read it.
///
/// ```no_run
/// use std::sync::Arc;
/// use mcp_streamable_oauth::{LoopbackRedirect, OAuth};
///
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let url = "https://mcp.example.com/mcp";
/// let browser = LoopbackRedirect::bind(|url| eprintln!("open {url} to authorize")).await?;
/// let oauth = OAuth::builder(url)
///     .authorization_code(browser)
///     .store(Arc::new(mcp_gateway::TokenFile::new("tokens.json")))
///     .build()?;
/// # drop(oauth);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
    held: Mutex<Option<Contents>>,
}

/// What the file holds.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    tokens: BTreeMap<String, Tokens>,
    #[serde(default)]
    registrations: BTreeMap<String, Registration>,
}

impl TokenFile {
    /// A store in the file at `path`, which need not exist yet.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TokenFile {
            path: path.into(),
            held: Mutex::new(None),
        }
    }

    /// Runs `f` on the contents, read from the file the first time; writes them back when
    /// `f` says it changed them.
    async fn with<T>(&self, f: impl FnOnce(&mut Contents) -> (T, bool)) -> Result<T, BoxError> {
        let mut held = self.held.lock().await;
        if held.is_none() {
            *held = Some(read(&self.path)?);
        }
        let contents = held.as_mut().expect("read above");
        let (value, changed) = f(contents);
        if changed {
            write(&self.path, contents)?;
        }
        Ok(value)
    }
}

fn read(path: &Path) -> Result<Contents, BoxError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| format!("token file {}: {e}", path.display()).into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Contents::default()),
        Err(e) => Err(format!("token file {}: {e}", path.display()).into()),
    }
}

fn write(path: &Path, contents: &Contents) -> Result<(), BoxError> {
    let json = serde_json::to_vec_pretty(contents)?;
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let _ = std::fs::remove_file(&partial);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(MODE)
        .open(&partial)?;
    file.write_all(&json)?;
    file.sync_all()?;
    std::fs::rename(&partial, path)?;
    Ok(())
}

/// Puts `value` under `key` (removes it for `None`).
fn put<T>(map: &mut BTreeMap<String, T>, key: &str, value: Option<T>) {
    match value {
        Some(value) => map.insert(key.to_owned(), value),
        None => map.remove(key),
    };
}

impl TokenStore for TokenFile {
    fn tokens<'a>(&'a self, resource: &'a str) -> StoreFuture<'a, Option<Tokens>> {
        Box::pin(self.with(|c| (c.tokens.get(resource).cloned(), false)))
    }

    fn set_tokens<'a>(&'a self, resource: &'a str, tokens: Option<Tokens>) -> StoreFuture<'a, ()> {
        Box::pin(self.with(move |c| (put(&mut c.tokens, resource, tokens), true)))
    }

    fn registration<'a>(&'a self, issuer: &'a str) -> StoreFuture<'a, Option<Registration>> {
        Box::pin(self.with(|c| (c.registrations.get(issuer).cloned(), false)))
    }

    fn set_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: Option<Registration>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.with(move |c| (put(&mut c.registrations, issuer, registration), true)))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("gateway-tokens-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("tokens.json")
    }

    fn tokens(access: &str) -> Tokens {
        serde_json::from_value(serde_json::json!({
            "access_token": access, "refresh_token": "r", "expires_at": null,
            "scope": "mcp", "issuer": "http://127.0.0.1:9",
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn what_one_run_keeps_the_next_one_reads_and_others_cannot() {
        let path = scratch("kept");
        let first = TokenFile::new(&path);
        assert!(first.tokens("http://a/mcp").await.unwrap().is_none());
        assert!(!path.exists(), "reading writes nothing");
        first
            .set_tokens("http://a/mcp", Some(tokens("t1")))
            .await
            .unwrap();
        let registration = Registration::new("client-1");
        first
            .set_registration("http://as", Some(registration))
            .await
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        let next = TokenFile::new(&path);
        let kept = next.tokens("http://a/mcp").await.unwrap().unwrap();
        assert_eq!(kept.access_token.expose(), "t1");
        assert!(next.tokens("http://b/mcp").await.unwrap().is_none());
        let kept = next.registration("http://as").await.unwrap().unwrap();
        assert_eq!(kept.client_id, "client-1");
        next.set_tokens("http://a/mcp", None).await.unwrap();
        assert!(
            TokenFile::new(&path)
                .tokens("http://a/mcp")
                .await
                .unwrap()
                .is_none()
        );
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[tokio::test]
    async fn a_file_that_is_not_a_token_file_is_an_error_not_an_empty_store() {
        let path = scratch("corrupt");
        std::fs::write(&path, "not json").unwrap();
        let error = TokenFile::new(&path).tokens("r").await.unwrap_err();
        assert!(error.to_string().contains("token file"), "{error}");
        // Nothing was overwritten.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
