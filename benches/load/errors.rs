//! Counting errors, and keeping the first few to show.

/// How many errors to keep the text of.
const SAMPLES: usize = 5;

/// Errors seen: how many, and the first few.
#[derive(Debug, Default)]
pub(crate) struct Errors {
    count: u64,
    samples: Vec<String>,
}

impl Errors {
    /// Counts one.
    pub(crate) fn add(&mut self, error: String) {
        self.count += 1;
        if self.samples.len() < SAMPLES {
            self.samples.push(error);
        }
    }

    /// Counts another tally's errors too.
    pub(crate) fn merge(&mut self, other: Errors) {
        self.count += other.count;
        let room = SAMPLES.saturating_sub(self.samples.len());
        self.samples.extend(other.samples.into_iter().take(room));
    }

    /// The count and the samples.
    pub(crate) fn into_parts(self) -> (u64, Vec<String>) {
        (self.count, self.samples)
    }
}
