//! A failure remembered with the time before the next attempt, for work that must not be
//! tried again on every call: a model download, a text the embedder rejects, an embedder that
//! did not answer.

use std::time::{Duration, Instant};

/// Why something failed, how many times in a row, and when to try it again. The wait doubles
/// with each failure in a row, from `first` up to `max` ([`Failure::after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    reason: String,
    count: u32,
    retry_at: Instant,
}

impl Failure {
    /// The failure that follows `previous` (the last attempt's, if it failed too): the next
    /// attempt waits `first` after one failure and twice as long after each further one, at
    /// most `max`.
    pub fn after(
        previous: Option<&Failure>,
        reason: impl Into<String>,
        first: Duration,
        max: Duration,
    ) -> Self {
        let count = previous.map_or(0, |p| p.count) + 1;
        let wait = first.saturating_mul(1 << (count - 1).min(20)).min(max);
        Self {
            reason: reason.into(),
            count,
            retry_at: Instant::now() + wait,
        }
    }

    /// Why it failed.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// What is left of the wait, or `None` once it may be tried again.
    pub fn wait_left(&self) -> Option<Duration> {
        (self.retry_at.checked_duration_since(Instant::now())).filter(|left| !left.is_zero())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_its_limit_and_then_runs_out() {
        let (first, max) = (Duration::from_secs(30), Duration::from_secs(100));
        let waits: Vec<u64> =
            std::iter::successors(Some(Failure::after(None, "x", first, max)), |f| {
                Some(Failure::after(Some(f), "x", first, max))
            })
            .take(4)
            .map(|f| f.wait_left().unwrap().as_secs_f64().round() as u64)
            .collect();
        assert_eq!(waits, [30, 60, 100, 100]);
        let over = Failure::after(None, "gone", Duration::ZERO, Duration::ZERO);
        assert_eq!(over.wait_left(), None);
        assert_eq!(over.reason(), "gone");
    }
}
