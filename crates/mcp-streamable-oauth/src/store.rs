//! Where tokens and registrations live between requests, and, with a store of your own,
//! between runs of the program.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use crate::error::BoxError;
use crate::registration::Registration;
use crate::token::Tokens;

/// The future a [`TokenStore`] method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send + 'a>>;

/// Keeps tokens (by resource) and client registrations (by authorization server issuer).
///
/// The default, [`MemoryStore`], forgets them when the program ends; implement this trait over
/// a file or the platform's keychain to keep them. Both types serialize with serde; their
/// secrets serialize as plain strings, so store them where secrets belong.
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens held for `resource`.
    fn tokens<'a>(&'a self, resource: &'a str) -> StoreFuture<'a, Option<Tokens>>;
    /// Keeps (or, with `None`, forgets) the tokens for `resource`.
    fn set_tokens<'a>(&'a self, resource: &'a str, tokens: Option<Tokens>) -> StoreFuture<'a, ()>;
    /// The client registered at `issuer`.
    fn registration<'a>(&'a self, issuer: &'a str) -> StoreFuture<'a, Option<Registration>>;
    /// Keeps (or, with `None`, forgets) the client registered at `issuer`.
    fn set_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: Option<Registration>,
    ) -> StoreFuture<'a, ()>;
}

/// A [`TokenStore`] in memory, for one run of the program.
#[derive(Debug, Default)]
pub struct MemoryStore {
    tokens: Mutex<HashMap<String, Tokens>>,
    registrations: Mutex<HashMap<String, Registration>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

fn put<T>(map: &Mutex<HashMap<String, T>>, key: &str, value: Option<T>) {
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    match value {
        Some(value) => map.insert(key.to_owned(), value),
        None => map.remove(key),
    };
}

fn get<T: Clone>(map: &Mutex<HashMap<String, T>>, key: &str) -> Option<T> {
    map.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(key)
        .cloned()
}

impl TokenStore for MemoryStore {
    fn tokens<'a>(&'a self, resource: &'a str) -> StoreFuture<'a, Option<Tokens>> {
        Box::pin(async move { Ok(get(&self.tokens, resource)) })
    }

    fn set_tokens<'a>(&'a self, resource: &'a str, tokens: Option<Tokens>) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            put(&self.tokens, resource, tokens);
            Ok(())
        })
    }

    fn registration<'a>(&'a self, issuer: &'a str) -> StoreFuture<'a, Option<Registration>> {
        Box::pin(async move { Ok(get(&self.registrations, issuer)) })
    }

    fn set_registration<'a>(
        &'a self,
        issuer: &'a str,
        registration: Option<Registration>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            put(&self.registrations, issuer, registration);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_keeps_and_forgets() {
        let store = MemoryStore::new();
        assert!(store.registration("https://as").await.unwrap().is_none());
        store
            .set_registration("https://as", Some(Registration::new("c")))
            .await
            .unwrap();
        let kept = store.registration("https://as").await.unwrap().unwrap();
        assert_eq!(kept.client_id, "c");
        assert!(store.registration("https://other").await.unwrap().is_none());
        store.set_registration("https://as", None).await.unwrap();
        assert!(store.registration("https://as").await.unwrap().is_none());
        assert!(store.tokens("r").await.unwrap().is_none());
    }
}
