//! Who holds which session, as this node last learnt it: the records are asked once per
//! session, not once per request; a forward the holder refuses, or that fails, corrects it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::core::cluster::Holder;

/// The sessions a node remembers the holders of, at most: a few MiB. Past it, one is
/// forgotten for each learnt, and asked for again when next needed.
const CAPACITY: usize = 65_536;

/// A bounded cache of session holders.
#[derive(Default)]
pub(crate) struct Directory {
    holders: Mutex<HashMap<Box<str>, Holder>>,
}

impl Directory {
    fn lock(&self) -> MutexGuard<'_, HashMap<Box<str>, Holder>> {
        self.holders.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self, session: &str) -> Option<Holder> {
        self.lock().get(session).cloned()
    }

    pub(crate) fn learn(&self, session: &str, holder: Holder) {
        let mut holders = self.lock();
        if holders.len() >= CAPACITY
            && !holders.contains_key(session)
            && let Some(any) = holders.keys().next().cloned()
        {
            holders.remove(&any);
        }
        holders.insert(session.into(), holder);
    }

    pub(crate) fn forget(&self, session: &str) {
        self.lock().remove(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::cluster::Fence;

    #[test]
    fn the_directory_stays_within_its_capacity() {
        let directory = Directory::default();
        let holder = Holder::new("a", Fence::new(1, 0));
        for n in 0..CAPACITY + 10 {
            directory.learn(&format!("s{n}"), holder.clone());
        }
        assert_eq!(directory.lock().len(), CAPACITY);
        let last = format!("s{}", CAPACITY + 9);
        assert_eq!(directory.get(&last), Some(holder));
        directory.forget(&last);
        assert_eq!(directory.get(&last), None);
    }
}
